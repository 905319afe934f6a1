#include "c10d/store/redis/redis_connection.h"

#include <poll.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "c10d/base/abi.h"
#include "c10d/store/redis/redis_reply.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace redis {

namespace {

using Clock = std::chrono::steady_clock;

timeval toTimeval(Milliseconds t) {
  // A zero timeval means "no timeout" to hiredis and to SO_RCVTIMEO: ours always has one.
  const int64_t ms = std::clamp<int64_t>(t.count(), 1, 24LL * 3600 * 1000);
  timeval tv;
  tv.tv_sec = static_cast<time_t>(ms / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
  return tv;
}

std::vector<const char*> argvOf(const std::vector<std::string>& args, std::vector<size_t>* lens) {
  std::vector<const char*> argv;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens->push_back(a.size());
  }
  return argv;
}

}  // namespace

Connection::Connection(const std::string& host, int port, const std::string& password,
                       Milliseconds timeout, const std::string& what)
    : host_(host), port_(port) {
  ctx_ = redisConnectWithTimeout(host.c_str(), port, toTimeval(timeout));
  if (ctx_ == nullptr) C10D_THROW(Error, what, ": cannot allocate a hiredis context");
  if (ctx_->err != 0) {
    const std::string err = ctx_->errstr;
    redisFree(ctx_);
    ctx_ = nullptr;
    if (err.find("timed out") != std::string::npos) {
      C10D_THROW(TimeoutError, what, ": connecting to Redis at ", host, ":", port,
                 " timed out after ", timeout.count(), " ms (", err, ")");
    }
    C10D_THROW(CommError, what, ": cannot connect to Redis at ", host, ":", port, ": ", err);
  }
  if (!password.empty()) {
    try {
      command({"AUTH", password}, timeout, what + " (AUTH)");
    } catch (...) {
      redisFree(ctx_);
      throw;
    }
  }
}

Connection::~Connection() {
  if (ctx_ != nullptr) redisFree(ctx_);
}

std::string Connection::endpoint() const {
  return host_ + ":" + std::to_string(port_);
}

void Connection::setTimeout(Milliseconds timeout) {
  if (redisSetTimeout(ctx_, toTimeval(timeout)) != REDIS_OK) {
    broken_ = true;
    C10D_THROW(Error, "RedisStore: setting a socket timeout on the connection to Redis at ",
               endpoint(), " failed: ", detail::errnoString(errno));
  }
}

void Connection::fail(const std::string& what, Milliseconds timeout) {
  broken_ = true;
  const std::string err = ctx_->errstr;
  if (ctx_->err == REDIS_ERR_IO && (err.find("temporarily unavailable") != std::string::npos ||
                                    err.find("timed out") != std::string::npos)) {
    C10D_THROW(TimeoutError, what, ": Redis at ", endpoint(), " did not answer within ",
               timeout.count(), " ms");
  }
  if (ctx_->err == REDIS_ERR_EOF) {
    C10D_THROW(CommError, what, ": Redis at ", endpoint(),
               " closed the connection (server stopped?): ", err);
  }
  C10D_THROW(CommError, what, ": connection to Redis at ", endpoint(), " failed: ", err);
}

std::vector<Reply> Connection::pipeline(const std::vector<std::vector<std::string>>& commands,
                                        Milliseconds timeout, const std::string& what) {
  setTimeout(timeout);
  for (const auto& args : commands) {
    std::vector<size_t> lens;
    std::vector<const char*> argv = argvOf(args, &lens);
    if (redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lens.data()) !=
        REDIS_OK) {
      fail(what, timeout);
    }
  }
  std::vector<Reply> replies;
  for (size_t i = 0; i < commands.size(); ++i) {
    void* r = nullptr;
    if (redisGetReply(ctx_, &r) != REDIS_OK || r == nullptr) fail(what, timeout);
    replies.emplace_back(static_cast<redisReply*>(r));
  }
  for (size_t i = 0; i < replies.size(); ++i) {
    throwIfError(*replies[i], commands[i][0], what, endpoint());
  }
  return replies;
}

void Connection::send(const std::vector<std::string>& args, Milliseconds timeout,
                      const std::string& what) {
  setTimeout(timeout);
  std::vector<size_t> lens;
  std::vector<const char*> argv = argvOf(args, &lens);
  if (redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lens.data()) !=
      REDIS_OK) {
    fail(what, timeout);
  }
  int done = 0;
  while (done == 0) {
    if (redisBufferWrite(ctx_, &done) != REDIS_OK) fail(what, timeout);
  }
}

Reply Connection::nextReply(Milliseconds timeout, const std::string& what) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    void* r = nullptr;
    if (redisGetReplyFromReader(ctx_, &r) != REDIS_OK) fail(what, timeout);
    if (r != nullptr) return Reply(static_cast<redisReply*>(r));
    const auto left = std::chrono::duration_cast<Milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return nullptr;
    pollfd pfd{ctx_->fd, POLLIN, 0};
    const int n = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      broken_ = true;
      C10D_THROW(CommError, what, ": poll on the connection to Redis at ", endpoint(),
                 " failed: ", detail::errnoString(errno));
    }
    if (n == 0) return nullptr;
    if (redisBufferRead(ctx_) != REDIS_OK) fail(what, timeout);
  }
}

}  // namespace redis
C10D_NAMESPACE_END
}  // namespace c10d
