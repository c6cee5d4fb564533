#!/usr/bin/env python3
"""Kills `remat train --state` with SIGKILL at random moments and restarts it, over and over.

After every kill, the state on disk (if any) must load (`remat train ... --steps 0` exits 0), and
when a job finally runs to its end, its saved parameters must equal, byte for byte, those of the
same training never interrupted. Each job starts from no state; jobs repeat until KILLS kills.

usage: kill_and_resume.py REMAT WORKDIR KILLS [SEED]
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import time

MODEL = 'mlp:layers=4,width=64,in=32,classes=4,dropout=0.2'
TRAIN = ['--batch', '16', '--optimizer', 'adam:lr=0.003', '--seed', '7']
STEPS = 400


def train(remat, state, params, steps, save_every=1):
    args = [remat, 'train', MODEL] + TRAIN + ['--steps', str(steps), '--save-params', params]
    if state is not None:
        args += ['--state', state, '--save-every', str(save_every)]
    return args


def main() -> int:
    remat, work, kills = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    shutil.rmtree(work, ignore_errors=True)  # A folder of this test's own, emptied first.
    os.makedirs(work)
    state, params, reference = (os.path.join(work, n) for n in ('run.state', 'run.safetensors', 'ref.safetensors'))
    started = time.monotonic()
    subprocess.run(train(remat, None, reference, STEPS), check=True, stdout=subprocess.DEVNULL)
    full_run = time.monotonic() - started
    with open(reference, 'rb') as f:
        want = f.read()
    killed = jobs = 0
    while killed < kills or jobs == 0:
        for path in (state, params):
            if os.path.exists(path):
                os.remove(path)
        jobs += 1
        while True:
            process = subprocess.Popen(train(remat, state, params, STEPS), stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE)
            if killed < kills:
                time.sleep(rng.uniform(0, full_run * 1.2))
            if process.poll() is None and killed < kills:
                process.send_signal(signal.SIGKILL)
                process.wait()
                killed += 1
                if os.path.exists(state):
                    check = subprocess.run(train(remat, state, os.path.join(work, 'check.safetensors'), 0),
                                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                    if check.returncode != 0:
                        print(f'kill {killed}: the state on disk does not load: {check.stderr.strip()}')
                        return 1
                continue
            _, err = process.communicate()
            if process.returncode != 0:
                print(f'job {jobs}: remat exited {process.returncode}: {err.decode().strip()}')
                return 1
            break
        with open(params, 'rb') as f:
            if f.read() != want:
                print(f'job {jobs}: parameters after {killed} kills differ from the uninterrupted run')
                return 1
    left = [n for n in os.listdir(work) if '.tmp.' in n]
    print(f'{killed} kills over {jobs} jobs of {STEPS} steps: every state loaded, every job ended with the '
          f'uninterrupted parameters, byte for byte (one straight run took {full_run:.2f} s; '
          f'{len(left)} temporary files of killed writers left behind, never a damaged target)')
    shutil.rmtree(work)
    return 0


if __name__ == '__main__':
    sys.exit(main())
