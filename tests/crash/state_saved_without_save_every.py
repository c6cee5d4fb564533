"""`remat train --state` without `--save-every`, killed with SIGKILL after its first periodic save:
the state on disk loads and a restarted run resumes from it, at step 1 or later, instead of
starting over. (Without a default, --state saved only at the end, and an interrupted run kept
nothing.) The run must also say how often it saves and why.

    usage: state_saved_without_save_every.py REMAT WORKDIR
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

MODEL = 'mlp:layers=2,width=16,in=8,classes=3'
TRAIN = ['--batch', '4', '--seed', '3']


def main() -> int:
    remat, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    state, out_path = os.path.join(work, 'run.state'), os.path.join(work, 'steps.txt')
    with open(out_path, 'wb') as out:
        process = subprocess.Popen([remat, 'train', MODEL] + TRAIN +
                                   ['--steps', '100000000', '--state', state],
                                   stdout=out, stderr=subprocess.DEVNULL)
    # Wait for the save's line and a few steps after it (a hang guard, not a timing).
    deadline, text = time.monotonic() + 60, ''
    while time.monotonic() < deadline and process.poll() is None:
        with open(out_path, 'rb') as f:
            text = f.read().decode()
        if 'state: saved at step 1' in text and text.count('\nstep ') >= 20:
            break
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    said = re.search(r'state: saved at step 1; a save takes [0-9.e+-]+ ms, a step [0-9.e+-]+ ms, '
                     r'so --state saves every ([0-9]+) steps', text)
    if said is None:
        print(f'no line saying how often --state saves:\n{text[:600]}')
        return 1
    # Load the state with a run of 0 steps past it: --steps below the saved step trains nothing.
    loaded = subprocess.run([remat, 'train', MODEL] + TRAIN + ['--steps', '1', '--state', state],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    at = re.search(r'resumed from .* at step ([0-9]+) of 1', loaded.stdout)
    if loaded.returncode != 0 or at is None or int(at.group(1)) < 1:
        print(f'the state did not resume at step 1 or later (exit {loaded.returncode}):\n'
              f'{loaded.stdout[-600:]}')
        return 1
    print(f'saved every {said.group(1)} steps; killed, the state resumed at step {at.group(1)}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
