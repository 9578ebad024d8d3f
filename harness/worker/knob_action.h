// The in-process part of a knob family (knobs/ has its torch-free rules): one KnobAction per
// family, in worker/actions/<family>.cpp, listed once in actions(). The worker's phases
// (worker/trial.h) never look at a knob's id; they call these in registry order for each arm.
//
// An action is stateless and shared by every arm; what it keeps for one arm lives in the ArmHooks
// it returns from prepare(), so that one process can hold the OFF and the ON arm of an experiment
// side by side (worker/arm.h). The stages, in the spirit of TorchBench's stage hooks:
//
//   KnobAction::configure    before the model is built: the arm's model options (no side
//                            effects: it is also asked whether two arms can share a model)
//   KnobAction::prepare      model and batch built, still on the host: process-wide switches
//                            (threads), this process's share of the batch, an input feed;
//                            returns the arm's hooks
//   ArmHooks::on_device      model and batch on the device: change the model or its layout,
//                            replace the arm's forward, forward-backward or optimizer step
//                            (Arm's stage functions), note what was built
//   begin                    once per arm, before its first step (the guard's)
//   around_step              held for a whole step (grad mode, profiler)
//   before_forward           each step, before its forward (inputs, zeroed gradients)
//   around_forward           held around every forward: the step's (each micro-batch's) and the
//                            guard's (autocast)
//   backward, optimizer step Arm::forward_backward and Arm::optimizer_step, one owner each
//   after_step               each step, after its optimizer step
//   begin_measurement, end_measurement: around the measured region (counters; the step after
//                            it that measures tensor memory)
//   read_back                append the evidence that the arm's settings took effect
#pragma once

#include <c10/core/DeviceType.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model_spec.h"

namespace tunebench::worker {

struct Arm;

// Something held for a stage (a guard, a profiler); released when the stage ends. Empty: nothing.
using Scope = std::shared_ptr<void>;

// One family's per-arm part. Every stage is optional.
class ArmHooks {
 public:
  virtual ~ArmHooks() = default;
  virtual void on_device(Arm& arm) {}
  virtual void begin(Arm& arm) {}
  virtual Scope around_step(Arm& arm) { return {}; }
  virtual void before_forward(Arm& arm) {}
  virtual Scope around_forward(Arm& arm) { return {}; }
  virtual void after_step(Arm& arm) {}
  virtual void begin_measurement(Arm& arm) {}
  virtual void end_measurement(Arm& arm) {}
  virtual void read_back(Arm& arm, nlohmann::json& evidence) {}
};

class KnobAction {
 public:
  virtual ~KnobAction() = default;
  // The family's name, as the rules files call it ("autograd", "script", …).
  virtual const char* family() const = 0;
  // The family's knobs that this build cannot run on `device`, each with the reason (shown as
  // "not applicable: <reason>"); empty when it runs them all.
  virtual std::map<std::string, std::string> unsupported(c10::DeviceType device) const {
    return {};
  }
  // Whether an arm with these settings changes its model (layout, modules, forward): such an arm
  // needs a model of its own; inference arms that do not may share one.
  virtual bool changes_model(const nlohmann::json& settings) const { return false; }
  virtual void configure(const nlohmann::json& settings, models::ModelSpec& model) const {}
  // nullptr: nothing to do in the arm's steps.
  virtual std::unique_ptr<ArmHooks> prepare(Arm& arm) const { return nullptr; }
};

// Every family's action, in the order their stages run (worker/knob_action.cpp says why).
const std::vector<const KnobAction*>& actions();

}  // namespace tunebench::worker
