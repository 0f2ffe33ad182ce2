/* placeholder */
typedef int tg_placeholder_;
