// The pools that answer long FUSE requests (request_pool.h) and the check of
// whether the kernel would give a mount its requests over io_uring.
#include "request_pool.h"
#include "uring_support.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace blosc2fs {
namespace {

// A gate jobs wait at until it opens.
class Gate {
 public:
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
};

// Counts up; wait_for(n) returns once it reached n.
class Counter {
 public:
  void add() {
    std::lock_guard lock(mutex_);
    ++n_;
    changed_.notify_all();
  }
  void wait_for(int n) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return n_ >= n; });
  }
  int value() {
    std::lock_guard lock(mutex_);
    return n_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int n_ = 0;
};

std::string thread_name() {
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  return name;
}

TEST(RequestPools, EveryJobRunsOnceOnANamedThread) {
  Counter ran;
  std::mutex mutex;
  std::set<std::string> names;
  {
    RequestPool pool("b2fs-test", 3);
    for (int i = 0; i < 100; ++i)
      pool.run([&] {
        {
          std::lock_guard lock(mutex);
          names.insert(thread_name());
        }
        ran.add();
      });
    ran.wait_for(100);
  }
  EXPECT_EQ(ran.value(), 100);
  EXPECT_EQ(names, std::set<std::string>{"b2fs-test"});
}

// In every test the pool is declared after what its jobs use, so that it is
// destroyed (its threads joined) first.
TEST(RequestPools, AJobNeverWaitsForABusyThreadWhileTheCapAllowsAnother) {
  Gate gate;
  Counter started, fourth;
  RequestPool pool("b2fs-test", 3);
  for (int i = 0; i < 3; ++i)
    pool.run([&] {
      started.add();
      gate.wait();
    });
  started.wait_for(3);  // three jobs at once: three threads
  // A fourth waits for one of them: the cap.
  pool.run([&] { fourth.add(); });
  EXPECT_EQ(fourth.value(), 0);
  gate.open();
  fourth.wait_for(1);
}

TEST(RequestPools, TheDestructorRunsWhatIsQueued) {
  Counter ran;
  Gate gate;
  {
    RequestPool pool("b2fs-test", 1);
    pool.run([&] {
      gate.wait();
      ran.add();
    });
    for (int i = 0; i < 5; ++i) pool.run([&] { ran.add(); });
    gate.open();
  }
  EXPECT_EQ(ran.value(), 6);
}

TEST(RequestPools, ACpusPoolRunsOnItsCpu) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  int cpu = CPU_SETSIZE - 1;  // the last CPU this process may use
  while (cpu > 0 && !CPU_ISSET(cpu, &allowed)) --cpu;
  std::atomic<int> ran_on{-1};
  Counter done;
  RequestPool pool("b2fs-cpu", 2, cpu);
  pool.run([&] {
    ran_on = sched_getcpu();
    done.add();
  });
  done.wait_for(1);
  EXPECT_EQ(ran_on.load(), cpu);
}

TEST(RequestPools, PoolsOfTheCpusAndTheSharedOne) {
  Counter done;
  std::string shared_name, cpu_name;
  RequestPools pools(4);
  pools.shared().run([&] {
    shared_name = thread_name();
    done.add();
  });
  pools.of_this_cpu().run([&] {
    cpu_name = thread_name();
    done.add();
  });
  done.wait_for(2);
  EXPECT_EQ(shared_name, "b2fs-worker");
  EXPECT_TRUE(cpu_name.starts_with("b2fs-cpu")) << cpu_name;
}

class UringSupportCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("uring-support-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path parameter(const std::string& value) {
    const std::filesystem::path p = dir_ / "enable_uring";
    std::ofstream(p) << value << "\n";
    return p;
  }
  std::filesystem::path dir_;
};

TEST_F(UringSupportCheck, AKernelWithoutTheParameterHasNone) {
  const UringSupport s = uring_support(dir_ / "missing");
  EXPECT_FALSE(s.available);
  EXPECT_NE(s.why_not.find("Linux 6.14"), std::string::npos) << s.why_not;
}

TEST_F(UringSupportCheck, SwitchedOffSaysHowToSwitchItOn) {
  const std::filesystem::path p = parameter("N");
  const UringSupport s = uring_support(p);
  EXPECT_FALSE(s.available);
  EXPECT_NE(s.why_not.find("echo Y > " + p.string()), std::string::npos) << s.why_not;
  EXPECT_EQ(s.why_not.find('\n'), std::string::npos) << "one line";
}

TEST_F(UringSupportCheck, SwitchedOnIsAvailableWhereThisProcessMayUseIoUring) {
  const UringSupport s = uring_support(parameter("Y"));
  // Where io_uring itself is refused (a seccomp filter, io_uring_disabled),
  // the reason is about io_uring, not the parameter.
  if (!s.available) {
    EXPECT_NE(s.why_not.find("may not use io_uring"), std::string::npos) << s.why_not;
  }
}

}  // namespace
}  // namespace blosc2fs
