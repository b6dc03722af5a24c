#!/usr/bin/env python3
"""deploy/container.

Always: runtime-packages.sh, which chooses the runtime image's packages, names installed,
non-development Debian packages that cover every library the built programs load.

With COPS_TEST_CONTAINER=1 (building compiles COPS from scratch in a fresh Debian 12 image,
tens of minutes): deploy/container/build.sh builds the image, and the image's programs run
(`podman run`, or in a chroot of the mounted image where this machine cannot start
containers): `copsd --help`, `cops --help` and the converter worker find all their
libraries.
"""

import os
import shutil

from harness import build_dir, check, run, run_ok, skip, source_dir

IMAGE = "localhost/cops:test"


def check_runtime_packages():
    script = os.path.join(source_dir(), "deploy", "container", "runtime-packages.sh")
    programs = [os.path.join(build_dir(), p) for p in
                ("server/copsd", "client/cops", "milter/cops-milter",
                 "convert/cops-convert-worker")]
    packages = run_ok([script] + programs).stdout.split()
    check(packages, "runtime-packages.sh printed no package")
    for name in ("libc6", "libstdc++6", "libgrpc++1.51"):
        check(name in packages, f"{name} missing from {packages}")
    status = dict(line.split(" ", 1) for line in run(
        ["dpkg-query", "-W", "-f=${Package} ${Status}\n"] + packages).stdout.splitlines())
    for package in packages:
        check(not package.endswith("-dev"), f"development package {package} in {packages}")
        check(status.get(package) == "install ok installed",
              f"{package} is not an installed package")


def run_in_image(args, stdin=""):
    """Runs a command of the image: podman run, else chroot into the mounted image."""
    r = run(["podman", "run", "--rm", "-i", "--entrypoint", args[0], IMAGE] + args[1:],
            input=stdin)
    if r.returncode == 0 or "OCI permission denied" not in r.stderr:
        return r
    mount = run_ok(["podman", "image", "mount", IMAGE]).stdout.strip()
    try:
        return run(["chroot", mount] + args, input=stdin)
    finally:
        run(["podman", "image", "unmount", IMAGE])


def main():
    check_runtime_packages()
    if os.environ.get("COPS_TEST_CONTAINER") != "1":
        skip("runtime packages checked; the image build (tens of minutes: debootstrap and a "
             "full compile) runs only with COPS_TEST_CONTAINER=1")
    for tool in ("podman", "debootstrap"):
        if shutil.which(tool) is None:
            skip(f"{tool} is not installed (Debian packages podman, buildah, debootstrap)")
    if os.geteuid() != 0:
        skip("debootstrap needs root")
    env = dict(os.environ)
    env.setdefault("BUILDAH_ISOLATION", "chroot")  # builds inside a container too
    run_ok([os.path.join(source_dir(), "deploy", "container", "build.sh"), IMAGE], env=env,
           timeout=3 * 3600)
    for program in ("/usr/bin/copsd", "/usr/bin/cops", "/usr/bin/cops-milter"):
        r = run_in_image([program, "--help"])
        check(r.returncode == 0 and ("--data-dir" in r.stdout or "--server" in r.stdout),
              f"{program} --help in the image:\n{r.stdout}{r.stderr}")
    # The worker loads its libraries (poppler, gmime, libxml2, ...) and answers an empty
    # request with its protocol's error.
    r = run_in_image(["/usr/libexec/cops/cops-convert-worker"])
    check(r.returncode == 0 and "bad request header" in r.stdout,
          f"cops-convert-worker in the image:\n{r.stdout}{r.stderr}")
    print("PASS")


if __name__ == "__main__":
    main()
