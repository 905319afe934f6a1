// Worker for c10drun_auth_test: a rank of a job launched by c10drun that rendezvouses through
// env:// (as init() does) and reports what it saw, one line:
//   "rank R auth=on|off secret=generated|given|none refused=yes|no|skipped intruder=in|out ok"
// auth: whether rank 0's TCPStore server requires authentication (rank 0 checks its own server;
// the others learn it from the store). refused: whether a client without the secret (rank 1 only)
// was refused with "authentication failed"; intruder: whether its key made it into the store.
// secret: C10D_STORE_SECRET is 64 hex digits (what
// c10drun generates), equal to argv[1] (a secret the test gave the launcher), or unset / empty.
// Never prints the secret. Exits 1 with a message on any error.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "c10d/base/error.h"
#include "c10d/bootstrap/init.h"
#include "c10d/store/tcp/tcp_store.h"

int main(int argc, char** argv) {
  using namespace c10d;
  try {
    const char* s = std::getenv("C10D_STORE_SECRET");
    std::string secretKind = "none";
    if (s != nullptr && *s != '\0') {
      const std::string v = s;
      if (argc > 1 && v == argv[1]) {
        secretKind = "given";
      } else if (v.size() == 64 && v.find_first_not_of("0123456789abcdef") == std::string::npos) {
        secretKind = "generated";
      } else {
        secretKind = "unexpected";
      }
    }
    Rendezvous rv = rendezvous("env://", -1, -1, Milliseconds(30000));
    auto* store = dynamic_cast<TCPStore*>(rv.store.get());
    if (store == nullptr) throw Error("env:// gave no TCPStore");
    if (rv.rank == 0) store->set("auth", store->server()->authRequired() ? "on" : "off");
    const std::string auth = store->getString("auth");
    std::string refused = "skipped";
    if (rv.rank == 1) {
      TCPStoreOptions o;
      o.host = store->host();
      o.port = store->port();
      o.secret = "";
      o.timeout = Milliseconds(10000);
      try {
        TCPStore intruder(o);
        intruder.set("intruder", "was here");
        refused = "no";
      } catch (const Error& e) {
        refused = std::strstr(e.what(), "authentication failed") != nullptr ? "yes" : e.what();
      }
    }
    // Everyone done before rank 0's server goes away.
    if (store->add("done", 1) == rv.worldSize) store->set("all-done", "1");
    store->wait({"all-done"});
    const bool intruder = store->check({"intruder"});
    std::printf("rank %d auth=%s secret=%s refused=%s intruder=%s ok\n", rv.rank, auth.c_str(),
                secretKind.c_str(), refused.c_str(), intruder ? "in" : "out");
    std::fflush(stdout);
    // Rank 0 serves until every rank is past its last request.
    if (store->add("finished", 1) == rv.worldSize) store->set("all-finished", "1");
    if (rv.rank == 0) store->wait({"all-finished"});
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "worker failed: %s\n", e.what());
    return 1;
  }
}
