// c10d: the umbrella header of the core library.
//
// Including it gives the whole public C++ API of the core: the error hierarchy, value types
// (Tensor, DataType, Device), reduce ops and reference kernels, Work, op options, ProcessGroup,
// broadcastCoalesced, the backend registry and init/rendezvous, and the diagnostics (flight
// recorder, stats, desync report). Stores have their own headers
// under store/.
#pragma once

#include "base/config.h"
#include "base/error.h"
#include "base/types.h"
#include "bootstrap/init.h"
#include "bootstrap/registry.h"
#include "core/broadcast_coalesced.h"
#include "core/flight_recorder.h"
#include "core/group_diagnostics.h"
#include "core/options.h"
#include "core/process_group.h"
#include "core/reduce_op.h"
#include "core/work.h"
