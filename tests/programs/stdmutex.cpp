// stdmutex: C++ synchronisation through libstdc++, which calls the pthread
// functions the collector wraps:
//   - a clearly contended std::mutex, taken with std::lock_guard on the line
//     marked CONTENDED-LINE (the test looks the line number up), held for
//     ~20 us by 2 threads, 300 rounds each;
//   - a std::shared_mutex with readers and a writer;
//   - a std::condition_variable hand-off.
// Prints deterministic totals.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

std::mutex contended_mutex;
static long contended_total;

std::shared_mutex table_mutex;
static std::vector<int> table(16, 0);

std::mutex cv_mutex;
std::condition_variable cv;
static int turn;
static long handoffs;

static void spin_for(std::chrono::microseconds d)
{
    auto end = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < end) {
    }
}

static void contended_worker()
{
    for (int i = 0; i < 300; i++) {
        {
            std::lock_guard<std::mutex> guard(contended_mutex); // CONTENDED-LINE
            contended_total++;
            spin_for(std::chrono::microseconds(20));
        }
        spin_for(std::chrono::microseconds(5));
    }
}

static void reader(long *sum)
{
    for (int i = 0; i < 200; i++) {
        std::shared_lock<std::shared_mutex> lock(table_mutex);
        for (int v : table)
            *sum += v;
    }
}

static void writer()
{
    for (int i = 0; i < 200; i++) {
        std::unique_lock<std::shared_mutex> lock(table_mutex);
        table[static_cast<size_t>(i) % table.size()]++;
    }
}

static void ping(int me)
{
    for (int i = 0; i < 100; i++) {
        std::unique_lock<std::mutex> lock(cv_mutex);
        cv.wait(lock, [me] { return turn == me; });
        handoffs++;
        turn = 1 - me;
        cv.notify_all();
    }
}

int main()
{
    {
        std::thread a(contended_worker), b(contended_worker);
        a.join();
        b.join();
    }
    std::printf("contended: total=%ld\n", contended_total);

    long s1 = 0, s2 = 0;
    {
        std::thread r1(reader, &s1), r2(reader, &s2), w(writer);
        r1.join();
        r2.join();
        w.join();
    }
    long table_sum = 0;
    for (int v : table)
        table_sum += v;
    std::printf("shared: table_sum=%ld\n", table_sum);

    {
        std::thread p0(ping, 0), p1(ping, 1);
        p0.join();
        p1.join();
    }
    std::printf("condvar: handoffs=%ld\n", handoffs);
    return 0;
}
