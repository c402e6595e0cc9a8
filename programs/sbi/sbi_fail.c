/* sbi_fail: prints one line and ends with SRST shutdown, reason "system failure" (SRST 10.1):
 * an SBI that maps the reason to an exit status ends with status 1. */
#include "sbi.h"

int main(unsigned long hartid, unsigned long dtb) {
    (void)dtb;
    printf("sbi_fail: rv%d hart %lu: system_reset(shutdown, system failure)\n", XLEN, hartid);
    sbi_exit(1);
}
