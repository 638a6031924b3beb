# The installed scaletrain (cmake/Install.cmake), as a cluster user runs it: tests/support/install_test.sh installs
# this build directory into a temporary prefix, moves the prefix, loads it with Debian's Lmod (`module use
# PREFIX/share/modulefiles`, `module load scaletrain`) in a clean environment and checks that scaletrain resolves into
# the prefix; install_local_lenet then trains 2 ranks of LeNet for 20 steps by the installed
# jobs/local/train_fmnist.sh (which packs Fashion-MNIST with the installed st-pack-idx). The one-node Slurm strong
# sweep by the installed strong_scaling.sbatch is slurm_install_strong_sweep in tests/slurm.cmake, on its test
# cluster. Without Lmod the tests are skipped; under CI=true they fail. Label: install.
if(NOT TARGET scaletrain)
  return()
endif()

add_test(NAME install_local_lenet
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/support/install_test.sh local ${PROJECT_BINARY_DIR})
set_tests_properties(install_local_lenet PROPERTIES LABELS install PROCESSORS 2 RUN_SERIAL TRUE TIMEOUT 120
                     SKIP_REGULAR_EXPRESSION "SKIPPED: ")
