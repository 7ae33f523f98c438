/*
 * nolocks: no pthread synchronisation at all; prints a checksum.
 */
#include <stdio.h>

int main(void)
{
    unsigned long x = 1;
    for (int i = 0; i < 100000; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    printf("checksum=%lu\n", x);
    return 0;
}
