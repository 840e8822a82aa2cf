"""Hold a device lease in a process of its own until killed: ``python lease_holder.py DEVICE``.

Prints ``held`` once the lease is taken, so a test knows when to kill or pause it."""

import sys
import time

from aoe_optuna.study.run.device_lease import DeviceLease

if __name__ == "__main__":
    with DeviceLease(sys.argv[1]).hold():
        print("held", flush=True)
        time.sleep(600)
