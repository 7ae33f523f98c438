// C++ function-local static initialisation contended (crates/contend-cli/
// tests/e2e/glibc_locks.rs): for each of ROUNDS statics, one thread runs
// the constructor, which waits until a second thread is about to ask for
// the same static and then sleeps 20 ms, so the second thread waits in
// libstdc++'s __cxa_guard_acquire on the guard variable (a futex wait).
// The report must name the guard word after its variable.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

static std::atomic<int> arrived{0};

template <int N> struct Table {
    Table()
    {
        while (arrived.load() <= N)
            std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    int v = N;
};

template <int N> __attribute__((noinline)) Table<N> &get_table()
{
    static Table<N> table;
    return table;
}

template <int N> static int round_of()
{
    int a = -1, b = -1;
    std::thread first([&] { a = get_table<N>().v; });
    std::thread second([&] {
        arrived.store(N + 1);
        b = get_table<N>().v;
    });
    first.join();
    second.join();
    return a == N && b == N ? 0 : 1;
}

int main()
{
    int bad = round_of<0>() + round_of<1>() + round_of<2>();
    std::printf("bad=%d\n", bad);
    return bad;
}
