#!/usr/bin/env python3
"""deploy/systemd as installed by `cmake --install`: the unit passes `systemd-analyze
verify` (which also checks that ExecStart names an executable), its hardening keeps
`systemd-analyze security` at "OK" or better, and the sysusers.d file creates the copsd user."""

import os
import shutil

from harness import TempDir, build_dir, check, run, run_ok, skip

# systemd-analyze prints exposure on a 0-10 scale ("OK" up to 3.9) and takes --threshold
# in tenths: 20 is 2.0. The unit scores 1.4.
MAX_EXPOSURE = 20


def main():
    if shutil.which("systemd-analyze") is None:
        skip("systemd-analyze is not installed (Debian package systemd)")
    with TempDir("systemd_unit") as tmp:
        prefix = os.path.join(tmp, "usr")
        run_ok(["cmake", "--install", build_dir(), "--prefix", prefix])
        unit = os.path.join(prefix, "lib", "systemd", "system", "copsd.service")
        check(os.path.isfile(unit), f"not installed: {unit}")
        check(f"ExecStart={prefix}/bin/copsd " in open(unit).read(),
              f"{unit} does not start the installed copsd")

        verify = run(["systemd-analyze", "verify", unit])
        if verify.returncode != 0 and "Failed to initialize manager" in verify.stderr:
            skip(f"systemd-analyze cannot run in this container: {verify.stderr.strip()}")
        check(verify.returncode == 0 and verify.stderr.strip() == "",
              f"systemd-analyze verify {unit}:\n{verify.stdout}{verify.stderr}")

        security = run(["systemd-analyze", "security", "--offline=true",
                        f"--threshold={MAX_EXPOSURE}", unit])
        check(security.returncode == 0,
              f"exposure above {MAX_EXPOSURE / 10}:\n{security.stdout}{security.stderr}")

        root = os.path.join(tmp, "root")
        os.makedirs(os.path.join(root, "etc"))
        run_ok(["systemd-sysusers", f"--root={root}",
                os.path.join(prefix, "lib", "sysusers.d", "copsd.conf")])
        passwd = open(os.path.join(root, "etc", "passwd")).read()
        check(any(line.startswith("copsd:") and ":/var/lib/copsd:" in line
                  for line in passwd.splitlines()),
              f"systemd-sysusers made no copsd user with home /var/lib/copsd:\n{passwd}")
    print("PASS")


if __name__ == "__main__":
    main()
