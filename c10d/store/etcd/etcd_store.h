// EtcdStore: a Store kept in an etcd cluster (v3 API, etcd >= 3.4, through its JSON gateway), so
// the rendezvous survives the loss of any one node, rank 0's included. Library c10d_store_etcd
// (libcurl); URL etcd://HOST:PORT[,HOST:PORT...]/PREFIX[?ttl=SECONDS] (see parseEtcdUrl).
//
// Layout: the store's keys live under "/PREFIX/k/" (one prefix per job: two jobs with different
// prefixes never see each other's keys); "/PREFIX/lease" holds the job's lease id.
//
// Operations: set / deleteKey / getNumKeys are one request each (put, deleterange, a count-only
// range). add, append and compareSet are etcd transactions that compare the key's mod_revision
// (or its absence) with what the client read and retry when another client got there first; a
// failed transaction returns the current value, so a retry costs one request. Under heavy
// contention on one key (thousands of clients add()ing to one counter) the retries make add
// O(contenders) requests each: see docs/stores.md "Stores that outlive a node" for the figures.
// wait / get of a missing key watch the key (a streaming /v3/watch from the revision of the check
// that found it missing, so a set in between is never lost); nothing polls.
//
// Lease (ttl > 0, default 60 s): every key is attached to one lease per job, created by the first
// client (a transaction on "/PREFIX/lease") and kept alive by every client's keepalive thread
// every ttl/3. When no client of the job is alive, etcd deletes all its keys ttl seconds later.
// A client that finds the lease expired (after a partition longer than ttl) takes a new one and
// prints a warning: the keys written before were deleted by etcd. ttl = 0: no lease, keys stay;
// a put replaces a key's lease, so a key last written by a ttl = 0 client of the job stays too.
//
// Threads: one keepalive thread ("c10d-etcd-lease") when ttl > 0, stopped and joined by the
// destructor. All methods are thread-safe.
//
// Timeouts and errors: every request is bounded by the store's timeout (wait: its argument),
// TimeoutError names the key and the timeout; an unreachable etcd is CommError naming the
// endpoint; a request etcd refuses is Error (etcd::EtcdError) with etcd's message. The default
// etcd limits a request to 1.5 MiB (--max-request-bytes) and a transaction to 128 operations
// (--max-txn-ops; multiSet / multiGet / check split their batches to fit).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/store/etcd/etcd_client.h"
#include "c10d/store/etcd/etcd_reply.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

struct EtcdStoreOptions {
  std::vector<std::string> endpoints{"127.0.0.1:2379"};  // "host:port" of the same cluster
  std::string prefix = "c10d";                           // the job's namespace, no leading '/'
  int leaseTtlSeconds = 60;                              // 0: no lease (keys never expire)
  Milliseconds timeout = kDefaultStoreTimeout;
};

// Parses etcd://HOST:PORT[,HOST:PORT...][/PREFIX][?ttl=SECONDS] (default prefix "c10d").
// Throws InvalidArgument naming the URL and what is wrong.
EtcdStoreOptions parseEtcdUrl(const std::string& url);

class EtcdStore : public Store {
 public:
  // Connects (takes or creates the job's lease); throws CommError if etcd cannot be reached
  // within the timeout.
  explicit EtcdStore(EtcdStoreOptions options);
  ~EtcdStore() override;

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  bool deleteKey(const std::string& key) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys, Milliseconds timeout) override;
  void append(const std::string& key, const Bytes& value) override;
  std::vector<Bytes> multiGet(const std::vector<std::string>& keys) override;
  void multiSet(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override;
  using Store::set;
  using Store::wait;

  // The lease keys are attached to (0 when ttl = 0), e.g. for etcdctl.
  int64_t leaseId() const C10D_EXCLUDES(leaseMu_);
  const EtcdStoreOptions& options() const { return options_; }

 private:
  using KeyState = etcd::KeyValue;

  std::string etcdKey(const std::string& key) const { return keyPrefix_ + key; }
  Milliseconds requestTimeout() const;
  // A request whose body carries the lease: retried once with a new lease if etcd lost ours.
  etcd::Json callWithLease(const std::string& path,
                           const std::function<etcd::Json(int64_t lease)>& body,
                           const std::string& what);
  KeyState read(const std::string& key, const std::string& what, int64_t* revision = nullptr);
  // Atomically replaces the key's value with update(current), retrying on conflicts.
  std::string readModifyWrite(const std::string& key, const std::string& what,
                              const std::function<std::string(const KeyState&)>& update);
  // Which of `keys` are missing, and the store revision the answer is from.
  std::vector<std::string> missing(const std::vector<std::string>& keys, int64_t* revision,
                                   const std::string& what);
  // Blocks until `key` is put after `revision`, or the deadline (false).
  bool watchForPut(const std::string& key, int64_t revision, Milliseconds timeout,
                   const std::string& what);
  void acquireLease(const std::string& what, Milliseconds timeout) C10D_EXCLUDES(leaseMu_);
  void keepaliveLoop() C10D_EXCLUDES(leaseMu_);

  const EtcdStoreOptions options_;
  const std::string root_;       // "/PREFIX"
  const std::string keyPrefix_;  // "/PREFIX/k/"
  etcd::EtcdClient client_;

  mutable Mutex leaseMu_;
  int64_t lease_ C10D_GUARDED_BY(leaseMu_) = 0;
  std::condition_variable stopCv_;
  bool stop_ C10D_GUARDED_BY(leaseMu_) = false;
  // Set by the keepalive thread once it waits: the constructor returns only then (see there).
  bool keepaliveWaiting_ C10D_GUARDED_BY(leaseMu_) = false;
  std::thread keepalive_;
};

C10D_NAMESPACE_END
}  // namespace c10d
