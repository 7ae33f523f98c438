// C++ std::mutex / std::shared_mutex / std::condition_variable under the
// collector (libstdc++ calls pthread_* through its gthread wrappers).
// Prints "ok".
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

int main()
{
    std::mutex m;
    std::shared_mutex sm;
    std::condition_variable cv;
    long counter = 0, reads = 0;
    int done = 0;
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; t++)
        ts.emplace_back([&] {
            for (int i = 0; i < 10000; i++) {
                {
                    std::lock_guard<std::mutex> g(m);
                    counter++;
                }
                if (i % 8 == 0) {
                    std::unique_lock<std::shared_mutex> w(sm);
                    reads++;
                } else {
                    std::shared_lock<std::shared_mutex> r(sm);
                }
            }
            std::lock_guard<std::mutex> g(m);
            done++;
            cv.notify_all();
        });
    {
        std::unique_lock<std::mutex> l(m);
        cv.wait(l, [&] { return done == 4; });
    }
    for (auto &t : ts)
        t.join();
    bool ok = counter == 40000 && reads == 4 * 1250;
    std::printf(ok ? "ok\n" : "FAIL\n");
    return ok ? 0 : 1;
}
