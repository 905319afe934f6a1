// The three ways train_mlp turns a backward pass into an update:
//   local  one process: FlatOptimizer over every parameter, back to back;
//   ddp    ddp::Reducer (gradient buckets allreduced from markReady, overlapping backward, then
//          averaged) followed by the same FlatOptimizer on every rank;
//   zero   zero::ShardedOptimizer (ZeRO-2): gradients reduced to their owner in buckets during
//          backward, each freed as the optimizer releases it (the model keeps no gradient array);
//          each rank steps its shard of the optimizer state, parameters all-gathered.
//   zero3  zero::FullyShardedModel (ZeRO-3, FSDP): each layer is a unit; the model's own arrays
//          are released and each layer's parameters gathered for its forward and backward
//          (Mlp::LayerStorage), its gradients reduce-scattered as its backward ends.
// Each gets the gradients as the model's own grad buffers, holding this rank's micro-batch mean.
//
// Threads: none of their own (the layers start none); everything runs on the training thread.
// Collectives: the ddp/zero constructors, step() and (zero) fullState() are collective over the
// group; every rank calls them in the same order. Errors come from the layers (InvalidArgument,
// TimeoutError, CommError) and are fatal to the run.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/core/process_group.h"
#include "c10d/layers/common/comm_event.h"
#include "c10d/layers/optim/optimizer_state.h"
#include "examples/train_mlp/checkpoint.h"
#include "examples/train_mlp/model.h"
#include "examples/train_mlp/options.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace example {

class TrainingMode {
 public:
  virtual ~TrainingMode() = default;
  // Backward reports parameter p's gradient complete.
  virtual void markReady(size_t p) = 0;
  // After backward: reduce the gradients (ddp, zero) and update the model's parameters.
  virtual void step() = 0;
  // The full optimizer state on rank 0 (collective in zero mode; empty on the other ranks).
  virtual optim::OptimizerState fullState() = 0;
  // Every rank: continue from a checkpoint's optimizer state (written at any world size): its
  // full state as CheckpointDir::read gives it (zero3: its file, as CheckpointDir::open does).
  virtual void loadState(const Checkpoint& ck) = 0;
  // Lines for the end of the run, and whether every rank should print its own (zero: the shards
  // differ) or rank 0 alone.
  virtual std::vector<std::string> summary() const = 0;
  virtual bool summaryPerRank() const { return false; }
  // zero3: a checkpoint is written one layer at a time, from these (collective) instead of the
  // model's arrays and fullState(): forEachLayer shows each layer's full parameters in turn (in
  // parameter order), layerState(l) gives layer l's full optimizer state on rank 0 (per
  // parameter, OptimizerState::slots' layout; empty elsewhere). Not called in the other modes.
  virtual bool layerByLayer() const { return false; }
  virtual void forEachLayer(const std::function<void(size_t, const std::vector<Tensor>&)>&) {}
  virtual std::vector<std::vector<std::vector<float>>> layerState(size_t) { return {}; }
  virtual uint64_t optimizerSteps() const { return 0; }
  // The model's Mlp::checksum and Mlp::evaluate; zero3 (collective) gathers one layer at a time
  // and never holds the whole model.
  virtual uint64_t checksum(const Mlp& model) { return model.checksum(); }
  virtual double evaluate(Mlp& model, const float* x, const int32_t* labels, size_t n) {
    return model.evaluate(x, labels, n);
  }
  // The collectives of the last step(), for --trace (local: none).
  std::vector<layers::CommEvent> takeComm() { return std::move(comm_); }

 protected:
  std::vector<layers::CommEvent> comm_;
};

// Builds the mode's machinery over `model`; ddp/zero broadcast rank 0's parameters (collective).
// zero takes a model without a gradient array (Mlp::Arrays::kParams). zero3 takes a model without
// arrays (Mlp::Arrays::kNone): resuming (`resume` set, opened with CheckpointDir::open), each rank
// reads its own shard of the parameters from the checkpoint's model file; else it makes the
// initial parameters one layer at a time (Mlp::Initializer from options.seed). The other modes
// ignore `resume` (the model holds its values).
std::unique_ptr<TrainingMode> makeMode(const TrainOptions& options, Mlp& model,
                                       std::shared_ptr<ProcessGroup> group,
                                       const Checkpoint* resume = nullptr);

}  // namespace example
C10D_NAMESPACE_END
}  // namespace c10d
