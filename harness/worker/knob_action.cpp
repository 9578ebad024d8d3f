#include "worker/knob_action.h"

namespace tunebench::worker {

// Each defined in worker/actions/<family>.cpp. The CUDA family acts through the device layer
// (worker/device_trial.h; its CUDA side is worker/actions/cuda.cpp).
const KnobAction& process_action();
const KnobAction& build_action();
const KnobAction& autograd_action();
const KnobAction& precision_action();
const KnobAction& script_action();
const KnobAction& compile_action();
const KnobAction& execution_action();
const KnobAction& distributed_action();
const KnobAction& input_action();

// One line per family. The order is the order of every stage, and it matters where one family
// builds on another: precision sets the layout before script scripts the model and execution
// keeps the batch; distributed replaces execution's forward-backward and takes this rank's share
// of the batch before input makes its feed from it; build reads the model back before execution's
// gradient comparison runs more forwards.
const std::vector<const KnobAction*>& actions() {
  static const std::vector<const KnobAction*> list = {
      &process_action(),    //
      &build_action(),      //
      &autograd_action(),   //
      &precision_action(),  //
      &script_action(),     //
      &compile_action(),    //
      &execution_action(),  //
      &distributed_action(), &input_action(),
  };
  return list;
}

}  // namespace tunebench::worker
