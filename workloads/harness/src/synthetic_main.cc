#include "pimcloud/harness/runner.h"
#include "pimcloud/harness/synthetic_service.h"

int main(int argc, char** argv) {
  return pimcloud::harness::harness_main("synthetic", pimcloud::harness::make_synthetic_service,
                                         argc, argv);
}
