"""Every JSON output of the `remat` command parses with a real JSON parser (Python's json
module) and holds the figures the text output gives: `inspect --json` alone and with each of
--ops, --tensors, --params and all three together; `size --json` of a batch range and of a
max-batch search. The budget keys mean one thing each in both commands (docs/sizing.md,
"Budgets"): `arena_budget_bytes` the arena, `device_budget_bytes` arena + persistent,
`host_budget_bytes` the host spill bytes.

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
        expect(sizes["arena_budget_bytes"] is None and sizes["device_budget_bytes"] is None
               and sizes["host_budget_bytes"] == 0, "size --json without budgets: none given, no spilling")
        search = parsed(remat, "size", model, "--max-batch", "--device-budget", "4MiB", "--json")
        expect(search["max_batch"] is True and all(r["batch"] >= 1 for r in search["rows"]), "size --max-batch --json")
        expect(search["device_budget_bytes"] == 4 << 20 and search["host_budget_bytes"] is None,
               "size --max-batch --json: the device budget, host spill unlimited")
        expect(all(r["device_bytes"] <= 4 << 20 for r in search["rows"]), "max-batch rows fit the device budget")
        # The three budgets at once, in size and in the plan compile writes with the same flags.
        arena_budget, device_budget, host_budget = 2 * arena, 1 << 30, 1 << 20
        flags = ["--batch", "4", "--strategy", "auto", "--arena-budget", str(arena_budget),
                 "--device-budget", str(device_budget), "--host-budget", str(host_budget)]
        both = parsed(remat, "size", model, *flags, "--json")
        expect(both["arena_budget_bytes"] == arena_budget, "size --json arena_budget_bytes is --arena-budget")
        expect(both["device_budget_bytes"] == device_budget, "size --json device_budget_bytes is --device-budget")
        expect(both["host_budget_bytes"] == host_budget, "size --json host_budget_bytes is --host-budget")
        row = both["rows"][0]
        expect(row["arena_budget_bytes"] == arena_budget and row["arena_bytes"] <= arena_budget,
               "a size row's arena_budget_bytes is the arena budget it fits")
        expect(row["device_bytes"] <= device_budget and row["host_bytes"] <= host_budget and row["fits"] is True,
               "a size row fits the device and host budgets")
        run(remat, "compile", model, *flags, "-o", plan)
        compiled = parsed(remat, "inspect", plan, "--json")
        expect(compiled["device_budget_bytes"] == device_budget, "inspect --json device_budget_bytes is --device-budget")
        expect(compiled["arena_bytes"] == row["arena_bytes"], "size's row is the plan compile writes")
        # size --budget, deprecated, was the device budget; it still is, without spilling.
        old = parsed(remat, "size", model, "--batch", "4", "--budget", "4MiB", "--json")
        expect(old["device_budget_bytes"] == 4 << 20 and old["host_budget_bytes"] == 0,
               "size --budget --json: the device budget, no spilling")
    finally:
        os.remove(plan)
    print("every JSON output parsed")


if __name__ == "__main__":
    main()
