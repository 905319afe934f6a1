// redis::Connection: one hiredis connection with RAII, timeouts and c10d errors. Used by one
// thread at a time (RedisStore pools them).
//
// Errors name the server and `what` (the Store operation and key): TimeoutError when a connect or
// reply takes longer than the timeout; CommError when the server cannot be reached or the
// connection breaks; Error for an error reply. After any of them the connection is broken()
// and must be dropped.
#pragma once

#include <hiredis/hiredis.h>

#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/types.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace redis {

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

class Connection {
 public:
  // Connects (and AUTHs with a non-empty password) within `timeout`.
  Connection(const std::string& host, int port, const std::string& password, Milliseconds timeout,
             const std::string& what);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends every command in one write, then reads one reply per command. An error reply to any of
  // them throws Error (InvalidArgument for "value is not an integer") after all are read.
  std::vector<Reply> pipeline(const std::vector<std::vector<std::string>>& commands,
                              Milliseconds timeout, const std::string& what);
  Reply command(const std::vector<std::string>& args, Milliseconds timeout,
                const std::string& what) {
    return std::move(pipeline({args}, timeout, what).front());
  }
  // Sends a command without reading its reply (SUBSCRIBE: replies come through nextReply).
  void send(const std::vector<std::string>& args, Milliseconds timeout, const std::string& what);
  // The next reply, or nullptr when none arrives within `timeout`.
  Reply nextReply(Milliseconds timeout, const std::string& what);

  bool broken() const { return broken_; }
  std::string endpoint() const;

 private:
  [[noreturn]] void fail(const std::string& what, Milliseconds timeout);
  void setTimeout(Milliseconds timeout);

  redisContext* ctx_ = nullptr;
  const std::string host_;
  const int port_;
  bool broken_ = false;
};

}  // namespace redis
C10D_NAMESPACE_END
}  // namespace c10d
