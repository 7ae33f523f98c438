/* dlopen()s dlopen_lib.so (path in argv[1]) and calls into it: the
 * collector must append a maps snapshot that covers the plugin. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    int (*work)(int) = (int (*)(int))dlsym(h, "plugin_work");
    int s = work(100);
    printf(s == 4950 ? "ok\n" : "FAIL\n");
    return s != 4950;
}
