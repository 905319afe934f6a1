// The addresses of this process's TCP sockets, as Gloo prints them ("[ip]:port"), so that a Gloo
// error quoting a peer's address can be turned into the rank that owns that address.
//
// Why: Gloo's tcp::Pair quotes `peer_` in its errors: the peer's listening address as the
// rendezvous published it (Debian's Gloo 0.5, which never re-reads it; ProcessGroupGloo finds it
// in Gloo's own store key), or, in Gloos that re-read it once connected, the peer's connected
// socket, which only the peer's process knows (tcp::Pair's accessors are protected, and Debian's
// libgloo-dev lacks a header tcp/pair.h includes). Every rank therefore publishes the local
// addresses of its own sockets, read from /proc (Linux) and printed by Gloo's own
// Address::str() (0.5 prints ports with their bytes swapped), so that they compare equal to what
// its errors quote; elsewhere the list is empty.
#pragma once

#include <string>
#include <vector>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace glooimpl {

// The local address of every TCP socket (IPv4 and IPv6) this process holds, any state, printed
// the way Gloo prints addresses in its errors (gloo::transport::tcp::Address::str(); Debian's Gloo
// 0.5 prints the port with its bytes swapped, and so does this). Empty where /proc is not
// readable.
std::vector<std::string> ownTcpAddresses();

// True when `msg` quotes `address` ("[ip]:port") as a whole: the character after it is not a
// digit (so "[127.0.0.1]:6364" is not found in "[127.0.0.1]:63640").
bool quotesAddress(const std::string& msg, const std::string& address);

}  // namespace glooimpl
C10D_NAMESPACE_END
}  // namespace c10d
