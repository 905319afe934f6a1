#include "c10d/backends/gloo/socket_names.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <gloo/transport/tcp/address.h>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace glooimpl {
namespace {

// Inodes of the sockets among this process's descriptors ("socket:[12345]").
std::set<unsigned long> ownSocketInodes() {
  std::set<unsigned long> inodes;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return inodes;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    char target[64];
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (std::strncmp(target, "socket:[", 8) != 0) continue;
    inodes.insert(std::strtoul(target + 8, nullptr, 10));
  }
  closedir(dir);
  return inodes;
}

// "0100007F:1F90" (IPv4) or 32 hex digits ":port" (IPv6), as /proc/net/tcp{,6} print an address:
// the address as 32-bit words in host order, the port as a number.
bool parseProcAddress(const std::string& field, bool v6, sockaddr_storage* out) {
  const size_t colon = field.find(':');
  if (colon == std::string::npos) return false;
  const std::string hex = field.substr(0, colon);
  const auto port = static_cast<uint16_t>(std::strtoul(field.c_str() + colon + 1, nullptr, 16));
  *out = sockaddr_storage{};
  if (!v6) {
    if (hex.size() != 8) return false;
    auto* a = reinterpret_cast<sockaddr_in*>(out);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    a->sin_addr.s_addr = static_cast<uint32_t>(std::strtoul(hex.c_str(), nullptr, 16));
  } else {
    if (hex.size() != 32) return false;
    auto* a = reinterpret_cast<sockaddr_in6*>(out);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    for (int w = 0; w < 4; ++w) {
      const uint32_t word =
          static_cast<uint32_t>(std::strtoul(hex.substr(8 * w, 8).c_str(), nullptr, 16));
      std::memcpy(a->sin6_addr.s6_addr + 4 * w, &word, 4);
    }
  }
  return true;
}

void addFromTable(const char* path, bool v6, const std::set<unsigned long>& inodes,
                  std::vector<std::string>* out) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
    std::istringstream fields(line);
    std::string sl, local, remote, st, queues, timer, retr, uid, timeout;
    unsigned long inode = 0;
    if (!(fields >> sl >> local >> remote >> st >> queues >> timer >> retr >> uid >> timeout >>
          inode)) {
      continue;
    }
    if (inode == 0 || inodes.count(inode) == 0) continue;
    sockaddr_storage address;
    if (parseProcAddress(local, v6, &address)) {
      out->push_back(::gloo::transport::tcp::Address(address).str());
    }
  }
}

}  // namespace

std::vector<std::string> ownTcpAddresses() {
  std::vector<std::string> out;
  const std::set<unsigned long> inodes = ownSocketInodes();
  if (inodes.empty()) return out;
  addFromTable("/proc/self/net/tcp", false, inodes, &out);
  addFromTable("/proc/self/net/tcp6", true, inodes, &out);
  return out;
}

bool quotesAddress(const std::string& msg, const std::string& address) {
  if (address.empty()) return false;
  for (size_t at = msg.find(address); at != std::string::npos; at = msg.find(address, at + 1)) {
    const size_t end = at + address.size();
    if (end >= msg.size() || !std::isdigit(static_cast<unsigned char>(msg[end]))) return true;
  }
  return false;
}

}  // namespace glooimpl
C10D_NAMESPACE_END
}  // namespace c10d
