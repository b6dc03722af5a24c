#!/usr/bin/env python3
"""deploy/k8s, checked offline with kubectl (no cluster is reachable here, and
`kubectl apply --dry-run=client` needs one for API discovery):

- `kubectl kustomize deploy/k8s` builds the manifests;
- each object survives kubectl's typed decoding unchanged (`kubectl set ... --local` decodes
  into the Kubernetes types and drops fields it does not know, so a misspelt or misplaced
  field shows up as a difference);
- the secrets the StatefulSet mounts are what docs/operations.md's `kubectl create secret`
  commands make;
- the probe command, run as written against a copsd serving TLS like the pod's, passes.
"""

import json
import os
import shutil

import yaml

from harness import Copsd, TempDir, build_dir, check, fail, run, run_ok, skip, source_dir


def typed_round_trip(kubectl, obj, path):
    """The object as kubectl's typed decoder returns it."""
    with open(path, "w") as f:
        json.dump(obj, f)
    kind = obj["kind"]
    if kind == "StatefulSet":
        # Changing the images decodes and re-encodes the whole object (kubectl prints
        # nothing for a change to the same value); the images are put back after.
        containers = obj["spec"]["template"]["spec"]["containers"]
        args = ["set", "image", "--local", "-f", path] + [
            f"{c['name']}={c['image']}-decoded" for c in containers]
        decoded = json.loads(run_ok(kubectl + args + ["-o", "json"]).stdout)
        for c in decoded["spec"]["template"]["spec"]["containers"]:
            c["image"] = c["image"].removesuffix("-decoded")
        return decoded
    if kind == "Service":
        selector = ",".join(f"{k}={v}" for k, v in obj["spec"]["selector"].items())
        args = ["set", "selector", "--local", "-f", path, selector]
        return json.loads(run_ok(kubectl + args + ["-o", "json"]).stdout)
    fail(f"no typed round trip for kind {kind}: add one to this test")


def missing_fields(original, decoded, where=""):
    """Paths of `original` that `decoded` lacks or holds with another value."""
    if isinstance(original, dict):
        if not isinstance(decoded, dict):
            return [where or "/"]
        out = []
        for key, value in original.items():
            if key not in decoded:
                out.append(f"{where}/{key}")
            else:
                out += missing_fields(value, decoded[key], f"{where}/{key}")
        return out
    if isinstance(original, list):
        if not isinstance(decoded, list) or len(decoded) != len(original):
            return [where]
        out = []
        for i, (a, b) in enumerate(zip(original, decoded)):
            out += missing_fields(a, b, f"{where}[{i}]")
        return out
    # Quantities and intstrs may come back as strings ("1" for 1).
    return [] if original == decoded or str(original) == str(decoded) else [where]


def make_certificate(tmp):
    """A self-signed certificate for the name "copsd", as the pod's probes expect."""
    cert, key = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
    run_ok(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-days", "2", "-subj", "/CN=copsd", "-addext", "subjectAltName=DNS:copsd",
            "-keyout", key, "-out", cert])
    shutil.copy(cert, os.path.join(tmp, "ca.crt"))
    return cert, key


def main():
    if shutil.which("kubectl") is None:
        skip("kubectl is not installed (Debian package kubernetes-client)")
    with TempDir("k8s") as tmp:
        # No kubeconfig, no cache in the user's home.
        kubeconfig = os.path.join(tmp, "kubeconfig")
        open(kubeconfig, "w").close()
        kubectl = ["kubectl", f"--kubeconfig={kubeconfig}", f"--cache-dir={tmp}/cache"]

        built = run_ok(kubectl + ["kustomize", os.path.join(source_dir(), "deploy", "k8s")])
        objects = [o for o in yaml.safe_load_all(built.stdout) if o]
        kinds = sorted(f"{o['kind']}/{o['metadata']['name']}" for o in objects)
        check(kinds == ["Service/copsd", "Service/copsd-headless", "StatefulSet/copsd"],
              f"unexpected objects: {kinds}")
        for obj in objects:
            decoded = typed_round_trip(kubectl, obj, os.path.join(tmp, "object.json"))
            lost = missing_fields(obj, decoded)
            check(not lost, f"{obj['kind']}/{obj['metadata']['name']}: fields kubectl does "
                  f"not know or changes: {lost}")

        sts = next(o for o in objects if o["kind"] == "StatefulSet")
        pod = sts["spec"]["template"]["spec"]
        copsd = pod["containers"][0]
        check(sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data" and
              any(m["name"] == "data" and m["mountPath"] == "/var/lib/copsd"
                  for m in copsd["volumeMounts"]),
              "the data volume claim is not mounted at the data directory")
        check("--data-dir=/var/lib/copsd" in copsd["args"], "copsd does not use the volume")
        check(copsd["resources"]["requests"], "no resource requests")
        port_names = {p["name"] for p in copsd["ports"]}
        for svc in (o for o in objects if o["kind"] == "Service"):
            for p in svc["spec"]["ports"]:
                check(p["targetPort"] in port_names,
                      f"Service {svc['metadata']['name']}: no container port {p['targetPort']}")

        # The secrets, made as docs/operations.md says, hold what the pod reads.
        cert, key = make_certificate(tmp)
        tls = yaml.safe_load(run_ok(kubectl + [
            "create", "secret", "generic", "copsd-tls", f"--from-file=tls.crt={cert}",
            f"--from-file=tls.key={key}", f"--from-file=ca.crt={tmp}/ca.crt",
            "--dry-run=client", "-o", "yaml"]).stdout)
        hash_key = yaml.safe_load(run_ok(kubectl + [
            "create", "secret", "generic", "copsd-hash-key",
            "--from-literal=hash-key=00112233445566778899aabbccddeeff",
            "--dry-run=client", "-o", "yaml"]).stdout)
        tls_volume = next(v for v in pod["volumes"] if v["name"] == "tls")
        check(tls_volume["secret"]["secretName"] == tls["metadata"]["name"],
              "the TLS volume does not mount the copsd-tls secret")
        tls_dir = next(m["mountPath"] for m in copsd["volumeMounts"] if m["name"] == "tls")
        for arg in copsd["args"]:
            if arg.startswith(("--tls-cert=", "--tls-key=")):
                name = os.path.relpath(arg.split("=", 1)[1], tls_dir)
                check(name in tls["data"], f"{arg}: the copsd-tls secret has no {name}")
        env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in copsd["env"]}
        check(env["COPS_HASH_KEY"] == {"name": "copsd-hash-key", "key": "hash-key"} and
              "hash-key" in hash_key["data"], "COPS_HASH_KEY does not come from copsd-hash-key")

        # Each probe's command, as written, against copsd serving TLS with those files.
        server = Copsd(os.path.join(build_dir(), "server", "copsd"), tmp,
                       args=["--auth=on", f"--tls-cert={cert}", f"--tls-key={key}"])
        with server.start():
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                command = [a.replace("/etc/cops/tls/", tmp + "/")
                              .replace("127.0.0.1:7411", server.address)
                           for a in copsd[probe]["exec"]["command"]]
                command[0] = os.path.join(build_dir(), "client", "cops")
                r = run(command, env={k: v for k, v in os.environ.items()
                                      if not k.startswith("COPS_")})
                check(r.returncode == 0 and r.stdout.strip() == "SERVING",
                      f"{probe} fails: {command}\n{r.stdout}{r.stderr}")
            check(server.stop() == 0, f"copsd did not stop cleanly:\n{server.log()}")
    print("PASS")


if __name__ == "__main__":
    main()
