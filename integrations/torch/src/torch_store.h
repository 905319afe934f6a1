// torch's Store (the one init_process_group hands a backend) as a c10d store: a
// c10d_store_callbacks_t table whose callbacks call the torch Store's virtuals, so that our groups
// rendezvous through env://, tcp:// and file:// exactly as torch's own groups do.
//
// Ownership: the returned c10d store holds a reference to the torch Store (an intrusive_ptr) and
// drops it in its destroy callback, which libc10d calls once, on whichever thread releases the
// store last (possibly a backend thread when the last group goes).
//
// Threads: the callbacks run on any thread, concurrently, and never take the GIL, so the store
// must be a C++ one (TCPStore, FileStore, HashStore, PrefixStore over them: every store
// init_process_group makes). torch's stores serialise their own operations.
//
// Errors: a torch exception becomes C10D_STATUS_TIMEOUT when its text says the key timed out
// ("timeout", "timed out"), otherwise C10D_STATUS_COMM_ERROR (the store's server is unreachable or
// replied badly); its text is passed on, so the c10d error reads
// "host store get('<key>'): <torch's message>". Nothing escapes a callback.
#ifndef C10D_INTEGRATIONS_TORCH_TORCH_STORE_H_
#define C10D_INTEGRATIONS_TORCH_TORCH_STORE_H_

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>

#include "capi.h"

namespace c10d_torch {

// A new c10d store handle over `store` (release with c10d_store_release). `timeout` bounds get and
// wait (what libc10d passes to the callbacks when asked for the store's default). Throws
// c10::Error with libc10d's message on failure.
c10d_store_t* wrapTorchStore(const c10::intrusive_ptr<::c10d::Store>& store,
                             std::chrono::milliseconds timeout);

}  // namespace c10d_torch

#endif  // C10D_INTEGRATIONS_TORCH_TORCH_STORE_H_
