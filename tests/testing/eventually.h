#ifndef COPS_TESTS_TESTING_EVENTUALLY_H_
#define COPS_TESTS_TESTING_EVENTUALLY_H_

// Waiting for a condition in a test without sleeping for a fixed time:
//
//   ASSERT_TRUE(testing::Eventually([&] { return map->LiveReplicas(0).size() == 2; }));
//
// Thread-safety: a plain function; `condition` runs on the calling thread.

#include <chrono>
#include <functional>

namespace cops::testing {

// Polls `condition` every 20 ms until it holds (true) or `timeout` has passed (false, after
// a last try).
bool Eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace cops::testing

#endif  // COPS_TESTS_TESTING_EVENTUALLY_H_
