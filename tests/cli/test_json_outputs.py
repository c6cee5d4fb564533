"""Every JSON output of the `remat` command parses with a real JSON parser (Python's json
module) and holds the figures the text output gives: `inspect --json` alone and with each of
--ops, --tensors, --params and all three together; `size --json` of a batch range and of a
max-batch search.

Run by meson (test cli_json_outputs): python3 test_json_outputs.py REMAT TMPDIR
"""
import json
import os
import subprocess
import sys


def run(remat, *args):
    done = subprocess.run([remat, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit("remat %s: exit %d: %s" % (" ".join(args), done.returncode, done.stderr))
    return done.stdout


def parsed(remat, *args):
    text = run(remat, *args)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise SystemExit("remat %s printed invalid JSON (%s):\n%s" % (" ".join(args), e, text))


def expect(condition, what):
    if not condition:
        raise SystemExit("failed: " + what)


def main():
    remat, tmp = sys.argv[1], sys.argv[2]
    plan = os.path.join(tmp, "json-outputs-%d.rplan" % os.getpid())
    model = "mlp:layers=3,width=16,in=8,classes=3"
    report = run(remat, "compile", model, "--batch", "4", "--strategy", "sqrt", "-o", plan)
    try:
        arena = int(report.split("arena:")[1].split()[0])
        summary = parsed(remat, "inspect", plan, "--json")
        expect(summary["arena_bytes"] == arena, "inspect --json arena_bytes is the compile report's")
        expect(summary["strategy"] == "sqrt" and summary["batch"] == 4, "inspect --json strategy and batch")
        for flags, keys in ((["--ops"], ["ops"]), (["--tensors"], ["tensors"]), (["--params"], ["params"]),
                            (["--ops", "--tensors", "--params"], ["ops", "tensors", "params"])):
            listing = parsed(remat, "inspect", plan, *flags, "--json")
            for key in keys:
                expect(isinstance(listing.get(key), list) and listing[key], "inspect %s --json has a %s list" % (flags, key))
            expect(listing["path"] == plan, "inspect %s --json ends with the path" % flags)
        params = parsed(remat, "inspect", plan, "--params", "--json")["params"]
        expect([p["name"] for p in params][:2] == ["fc0.weight", "fc0.bias"], "params named as the state_dict")
        sizes = parsed(remat, "size", model, "--batch", "2..8", "--json")
        expect(len(sizes["rows"]) > 0 and all("arena_bytes" in r for r in sizes["rows"]), "size --json rows")
        search = parsed(remat, "size", model, "--max-batch", "--budget", "4MiB", "--json")
        expect(search["max_batch"] is True and all(r["batch"] >= 1 for r in search["rows"]), "size --max-batch --json")
    finally:
        os.remove(plan)
    print("every JSON output parsed")


if __name__ == "__main__":
    main()
