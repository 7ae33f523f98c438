// cxx_lambda: two lambdas run by std::thread, each taking a std::mutex on
// a marked line, for the test that names a call site in an inlined lambda
// after its closure type (crates/contend-cli/tests/e2e/sites.rs): the
// debug information names an inlined lambda's body only `operator()`.
#include <cstdio>
#include <mutex>
#include <thread>

static std::mutex shared;
static long total;

static void work(long n)
{
    std::thread adder([n] {
        for (long i = 0; i < n; i++) {
            std::lock_guard<std::mutex> g(shared); // ADDER-LINE
            total += 1;
        }
    });
    std::thread doubler([n] {
        for (long i = 0; i < n; i++) {
            std::lock_guard<std::mutex> g(shared); // DOUBLER-LINE
            total += 2;
        }
    });
    adder.join();
    doubler.join();
}

int main()
{
    work(20000);
    std::printf("total %ld\n", total);
    return total == 60000 ? 0 : 1;
}
