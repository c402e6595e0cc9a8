/* The first instruction of a user program of the system build (programs/system/, user.ld puts
 * .user_entry at the start of the text page, where the kernel enters it): a jump to its main
 * (MAIN, given when it is built). */
    .section .user_entry, "ax"
    .globl _start
_start:
    j MAIN
