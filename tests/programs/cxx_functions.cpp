// C++ functions for `contend record --function` by their source names
// (crates/contend-cli/tests/e2e/cxx_functions.rs): `middle` calls `inner`,
// which throws on every third call when the build has exceptions (the
// exception passes through `middle`); `work::step` is overloaded. Prints
// one JSON line with the program's own results.
#include <cstdio>
#ifdef __cpp_exceptions
#include <stdexcept>
#endif

__attribute__((noinline)) int inner(int i) {
#ifdef __cpp_exceptions
    if (i % 3 == 0)
        throw std::runtime_error("every third call");
#endif
    return i;
}

__attribute__((noinline)) int middle(int i) { return inner(i) + 1; }

namespace work {
__attribute__((noinline)) int step(int x) { return x * 3 + 1; }
__attribute__((noinline)) double step(double x) { return x * 0.5; }
} // namespace work

int main() {
    long sum = 0, caught = 0;
    double half = 0;
    for (int i = 0; i < 3000; i++) {
#ifdef __cpp_exceptions
        try {
            sum += middle(i);
        } catch (const std::exception &) {
            caught++;
        }
#else
        sum += middle(i);
#endif
        sum += work::step(i);
        half += work::step(double(i));
    }
    std::printf("{\"sum\": %ld, \"caught\": %ld, \"half\": %.0f}\n", sum, caught, half);
    return 0;
}
