#include "c10d/store/etcd/etcd_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <exception>
#include <mutex>

#include "c10d/base/abi.h"
#include "c10d/store/etcd/etcd_reply.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace etcd {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
// Idle handles kept per client: enough for the threads of one process that use one store.
constexpr size_t kMaxIdleHandles = 8;

void globalInit() {
  static std::once_flag once;
  std::call_once(once, [] {
    const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
      C10D_THROW(Error, "EtcdStore: curl_global_init failed: ", curl_easy_strerror(rc));
    }
  });
}

// Requests that never reached the server: safe to send to another endpoint.
bool notSent(CURLcode rc) {
  return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST;
}

long clampMs(Milliseconds t) {
  // curl reads 0 as "no timeout"; ours always has one.
  return static_cast<long>(std::clamp<int64_t>(t.count(), 1, 24LL * 3600 * 1000));
}

}  // namespace

std::string base64Encode(const std::string& raw) {
  std::string out;
  out.reserve((raw.size() + 2) / 3 * 4);
  size_t i = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
  for (; i + 2 < raw.size(); i += 3) {
    const uint32_t v = (p[i] << 16) | (p[i + 1] << 8) | p[i + 2];
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i + 1 == raw.size()) {
    const uint32_t v = p[i] << 16;
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == raw.size()) {
    const uint32_t v = (p[i] << 16) | (p[i + 1] << 8);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::string base64Decode(const std::string& in) {
  static const auto table = [] {
    std::array<int8_t, 256> t;
    t.fill(-1);
    for (int i = 0; i < 64; ++i)
      t[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
    return t;
  }();
  C10D_CHECK(in.size() % 4 == 0, "base64 value of length ", in.size(), " from etcd");
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (size_t k = 0; k < 4; ++k) {
      const unsigned char c = static_cast<unsigned char>(in[i + k]);
      if (c == '=' && i + 4 == in.size() && k >= 2) {
        ++pad;
        v <<= 6;
        continue;
      }
      C10D_CHECK(table[c] >= 0 && pad == 0, "bad base64 byte ", static_cast<int>(c), " at ", i + k,
                 " in a value from etcd");
      v = (v << 6) | static_cast<uint32_t>(table[c]);
    }
    out += static_cast<char>(v >> 16);
    if (pad < 2) out += static_cast<char>((v >> 8) & 255);
    if (pad < 1) out += static_cast<char>(v & 255);
  }
  return out;
}

int64_t jsonInt(const Json& j, const char* field) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return 0;
  if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t{INT64_MAX}) {
    C10D_THROW(Error, "etcd reply field '", field, "' is out of the int64 range: ", it->dump());
  }
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    int64_t v = 0;
    const auto res = std::from_chars(s.data(), s.data() + s.size(), v);
    if (!s.empty() && res.ec == std::errc() && res.ptr == s.data() + s.size()) return v;
    C10D_THROW(Error, "etcd reply field '", field, "' is not a decimal int64: \"", s.substr(0, 64),
               "\"");
  }
  C10D_THROW(Error, "etcd reply field '", field, "' is not an integer: ",
             it->dump(-1, ' ', false, Json::error_handler_t::replace).substr(0, 64));
}

std::string jsonBytes(const Json& j, const char* field) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return "";
  if (!it->is_string()) {
    C10D_THROW(Error, "etcd reply field '", field, "' is not a base64 string: ",
               it->dump(-1, ' ', false, Json::error_handler_t::replace).substr(0, 64));
  }
  return base64Decode(it->get_ref<const std::string&>());
}

struct EtcdClient::Handle {
  Handle() : curl(curl_easy_init()) {
    if (curl == nullptr) C10D_THROW(Error, "EtcdStore: curl_easy_init failed");
    headers = curl_slist_append(nullptr, "Content-Type: application/json");
    // No "Expect: 100-continue" round trip before large bodies.
    headers = curl_slist_append(headers, "Expect:");
  }
  ~Handle() {
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  // One POST; the reply body goes to `sink` chunk by chunk (returning false aborts the transfer).
  CURLcode post(const std::string& url, const std::string& body, Milliseconds timeout,
                const std::function<bool(const char*, size_t)>& sink, long* status) {
    sink_ = &sink;
    error[0] = '\0';
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Handle::onData);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, this);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, clampMs(timeout));
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, clampMs(timeout));
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for resolver timeouts
    curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(curl, CURLOPT_PROXY, "");  // never through an http_proxy from the environment
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    const CURLcode rc = curl_easy_perform(curl);
    *status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
    sink_ = nullptr;
    return rc;
  }

  std::string describe(CURLcode rc) const {
    return error[0] != '\0' ? std::string(error) : std::string(curl_easy_strerror(rc));
  }

  static size_t onData(char* data, size_t size, size_t n, void* self) {
    auto* h = static_cast<Handle*>(self);
    return (*h->sink_)(data, size * n) ? size * n : 0;
  }

  CURL* curl;
  curl_slist* headers = nullptr;
  const std::function<bool(const char*, size_t)>* sink_ = nullptr;
  char error[CURL_ERROR_SIZE] = {};
};

EtcdClient::EtcdClient(std::vector<std::string> endpoints) : endpoints_(std::move(endpoints)) {
  C10D_CHECK_ARG(!endpoints_.empty(), "EtcdStore: no etcd endpoint given");
  globalInit();
}

EtcdClient::~EtcdClient() = default;

std::string EtcdClient::currentEndpoint() const {
  MutexLock lock(mu_);
  return "http://" + endpoints_[current_];
}

std::unique_ptr<EtcdClient::Handle> EtcdClient::acquire() {
  {
    MutexLock lock(mu_);
    if (!idle_.empty()) {
      auto h = std::move(idle_.back());
      idle_.pop_back();
      return h;
    }
  }
  return std::make_unique<Handle>();
}

void EtcdClient::release(std::unique_ptr<Handle> h) {
  MutexLock lock(mu_);
  if (idle_.size() < kMaxIdleHandles) idle_.push_back(std::move(h));
}

Json EtcdClient::call(const std::string& path, const Json& body, Milliseconds timeout,
                      const std::string& what) {
  const std::string payload = body.dump();
  std::string reply;
  const std::function<bool(const char*, size_t)> sink = [&](const char* d, size_t n) {
    reply.append(d, n);
    return true;
  };
  auto h = acquire();
  size_t first;
  {
    MutexLock lock(mu_);
    first = current_;
  }
  CURLcode rc = CURLE_OK;
  long status = 0;
  std::string endpoint;
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    endpoint = "http://" + endpoints_[(first + i) % endpoints_.size()];
    reply.clear();
    rc = h->post(endpoint + path, payload, timeout, sink, &status);
    if (!notSent(rc)) {
      if (i != 0) {
        MutexLock lock(mu_);
        current_ = (first + i) % endpoints_.size();
      }
      break;
    }
  }
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    // The connection may be mid-reply: do not reuse it.
    C10D_THROW(TimeoutError, what, ": etcd at ", endpoint, " did not answer ", path, " within ",
               timeout.count(), " ms");
  }
  if (rc != CURLE_OK) {
    const std::string err = h->describe(rc);
    C10D_THROW(CommError, what, ": cannot reach etcd at ", endpoint,
               endpoints_.size() > 1 ? " (nor the other endpoints)" : "", ": ", path, ": ", err);
  }
  release(std::move(h));
  return parseReply(status, reply, endpoint, path, what);
}

bool EtcdClient::watch(const Json& createRequest, Milliseconds timeout, const std::string& what,
                       const std::function<bool(const Json&)>& onMessage) {
  const std::string payload = Json{{"create_request", createRequest}}.dump();
  WatchStreamReader reader;
  // The sink runs inside curl's C code: nothing may be thrown through it, so an exception of
  // onMessage stops the transfer and is rethrown once curl has returned.
  std::exception_ptr error;
  const std::function<bool(const char*, size_t)> sink = [&](const char* d, size_t n) {
    try {
      return reader.feed(std::string_view(d, n), onMessage);
    } catch (...) {
      error = std::current_exception();
      return false;
    }
  };
  Handle h;  // of its own: an aborted stream leaves its connection unusable
  long status = 0;
  const std::string endpoint = currentEndpoint();
  const CURLcode rc = h.post(endpoint + "/v3/watch", payload, timeout, sink, &status);
  if (error) std::rethrow_exception(error);
  if (reader.done()) return true;
  if (rc == CURLE_OPERATION_TIMEDOUT) return false;
  if (!reader.failure().empty()) {
    C10D_THROW(Error, what, ": etcd at ", endpoint, ": ", reader.failure());
  }
  if (rc != CURLE_OK) {
    C10D_THROW(CommError, what, ": watch on etcd at ", endpoint, " failed: ", h.describe(rc));
  }
  C10D_THROW(CommError, what, ": etcd at ", endpoint, " ended a watch stream (HTTP ", status,
             ") before the key was set");
}

}  // namespace etcd
C10D_NAMESPACE_END
}  // namespace c10d
