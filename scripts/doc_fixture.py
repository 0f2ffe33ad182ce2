"""doc_fixture.py - what the self-tests of the doc scripts share
(check_doc_samples.py, gen_api_reference.py, gen_error_catalogue.py): a
small source tree written into a temporary folder, from a dict of files
and a list of changes that make it wrong in one way each, and a stream
that keeps what a check prints.

Python 3 standard library only.
"""
import os


def write_tree(folder, files, changes=()):
    """Writes files ({relative path: text}) under folder, each change
    (path, old, new) first replacing the first old in that file by new
    (an AssertionError when old is not there: the fixture and the change
    disagree). Returns the files as written."""
    files = dict(files)
    for name, old, new in changes:
        if old not in files[name]:
            raise AssertionError("self-test fixture: %r not in %s"
                                 % (old, name))
        files[name] = files[name].replace(old, new, 1)
    for name, text in files.items():
        path = os.path.join(folder, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return files


class Capture:
    """A stream for out=: keeps what is written in .text."""

    def __init__(self):
        self.text = ""

    def write(self, s):
        self.text += s
