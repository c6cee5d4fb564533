"""`remat train` with its step lines going to a file (not a terminal), killed with SIGKILL once
a few lines are there: the file holds whole lines only, the plan's, then steps 1, 2, ... in
order, each written when its step ended. Block-buffered output would lose the last part-filled block and end the
file mid-line (at a 4096-byte boundary).

    usage: step_lines_survive_a_kill.py REMAT WORKDIR
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

MODEL = 'mlp:layers=2,width=16,in=8,classes=3'


def main() -> int:
    remat, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    out_path = os.path.join(work, 'steps.txt')
    with open(out_path, 'wb') as out:
        process = subprocess.Popen([remat, 'train', MODEL, '--batch', '4', '--steps', '100000000'],
                                   stdout=out, stderr=subprocess.DEVNULL)
    # Wait for 200 lines (a hang guard, not a timing: a minute is ample for that many tiny steps).
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        with open(out_path, 'rb') as f:
            if f.read().count(b'\n') >= 200:
                break
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    with open(out_path, 'rb') as f:
        text = f.read().decode()
    lines = text.split('\n')
    if len(lines) < 2 or lines[-1] != '':
        print(f'the file ends mid-line or holds no line: {text[-80:]!r}')
        return 1
    steps = [line for line in lines[:-1] if line.startswith('step ')]
    if lines[len(lines) - 1 - len(steps):-1] != steps:  # the plan's lines first, then the steps
        print('a step line comes before another line')
        return 1
    for n, line in enumerate(steps, start=1):
        if not re.fullmatch(rf'step {n} loss -?[0-9.]+(e[-+][0-9]+)?', line):
            print(f'step line {n} is {line!r}, not step {n} whole')
            return 1
    print(f'{len(steps)} whole step lines written before the kill')
    return 0


if __name__ == '__main__':
    sys.exit(main())
