"""Booting the kernel in QEMU for tools/test/runner.py: the accelerator's choice,
QEMU's command line, a QEMU process whose serial output a thread collects,
and the stopping of every QEMU on Ctrl-C.

The kernel reports the end of a test run through the isa-debug-exit device:
QEMU exits with EXIT_PASS when every test passed, EXIT_FAIL when one failed,
EXIT_PANIC on a panic.
"""

import os
import re
import subprocess
import threading
import time

EXIT_PASS = 1
EXIT_FAIL = 3
EXIT_PANIC = 5
# Every QEMU started, so that Ctrl-C stops them all; STOPPING keeps boots
# that had not started yet from starting.
LIVE_QEMUS = set()
LIVE_LOCK = threading.Lock()
STOPPING = threading.Event()

def host_cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def host_cpu_vendor():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def kvm_usable():
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
    except OSError:
        return False
    os.close(fd)
    return True


def choose_accel(requested):
    """Return (accel, reason). KVM only where the host has hardware
    virtualization: a nested, emulation-based /dev/kvm is far slower than
    TCG. Only a user's ACCEL= reads "forced".

    >>> choose_accel("tcg")
    ('tcg', 'forced by ACCEL=tcg')
    >>> choose_accel("auto")[1].startswith("forced")
    False
    """
    if requested == "tcg":
        return "tcg", "forced by ACCEL=tcg"
    if requested == "kvm":
        return "kvm", "forced by ACCEL=kvm"
    flags = host_cpu_flags()
    if not (flags & {"vmx", "svm"}):
        return "tcg", "no vmx/svm in the host CPU flags"
    if not kvm_usable():
        return "tcg", "/dev/kvm cannot be opened"
    return "kvm", "host has hardware virtualization and /dev/kvm"


def qemu_command(iso, smp, accel, mem, cmdline, icount=False, gdb=0,
                 interactive=False, pmu=False):
    cmd = ["qemu-system-x86_64", "-cdrom", iso, "-boot", "d",
           "-m", mem, "-smp", str(smp), "-display", "none", "-no-reboot",
           "-serial", "mon:stdio" if interactive else "stdio",
           "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]
    if not interactive:
        cmd += ["-monitor", "none"]
    if accel == "kvm":
        # arch-capabilities is left out: measured on a nested AMD host,
        # QEMU 7.2 aborts setting MSR 0x10a for it; this kernel never
        # reads it.
        cpu = "host,pmu=on" if pmu else "host"
        cmd += ["-accel", "kvm", "-cpu", cpu + ",-arch-capabilities"]
    else:
        cmd += ["-accel", "tcg", "-cpu", "max"]
    if icount:
        cmd += ["-icount", "shift=0"]
    if gdb:
        # Wait, stopped, for gdb on TCP port gdb (make debug GDB_PORT=).
        cmd += ["-gdb", "tcp::%d" % gdb, "-S"]
    if cmdline:
        # QEMU option values escape a comma by doubling it.
        cmd += ["-fw_cfg", "name=opt/perfmon/cmdline,string="
                + cmdline.replace(",", ",,")]
    return cmd


class Qemu:
    """A QEMU process whose serial output is collected by a thread."""

    def __init__(self, cmd):
        # Its own process group: a Ctrl-C reaches the runner alone, which
        # then stops every QEMU and still prints what finished.
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT,
                                     start_new_session=True)
        with LIVE_LOCK:
            LIVE_QEMUS.add(self)
        self.text = ""
        self.cond = threading.Condition()
        self.done = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        fd = self.proc.stdout.fileno()
        while True:
            data = os.read(fd, 4096)
            with self.cond:
                if not data:
                    self.done = True
                    self.cond.notify_all()
                    return
                self.text += data.decode("utf-8", "replace").replace("\r", "")
                self.cond.notify_all()

    def expect(self, pattern, start, deadline):
        """Wait for pattern in the output after offset start. Return the
        match, or None at the deadline or when QEMU ends."""
        regex = re.compile(pattern, re.M)
        with self.cond:
            while True:
                m = regex.search(self.text, start)
                if m:
                    return m
                left = deadline - time.monotonic()
                if left <= 0 or self.done:
                    return None
                self.cond.wait(min(left, 0.5))

    def send(self, text):
        try:
            self.proc.stdin.write(text.encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def wait(self, deadline, heartbeat=None, period=10):
        """Wait for QEMU to exit; return its status or None on timeout.
        heartbeat, when given, is called every period seconds meanwhile."""
        rc = None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                rc = self.proc.wait(timeout=min(left, period)
                                    if heartbeat else left)
                break
            except subprocess.TimeoutExpired:
                if heartbeat:
                    heartbeat(self)
        if rc is None:
            self.kill()
        self.reader.join(timeout=5)
        with LIVE_LOCK:
            LIVE_QEMUS.discard(self)
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def last_line(self):
        with self.cond:
            lines = self.text.strip().splitlines()
        return lines[-1] if lines else "(no output yet)"


def stop_all_qemus():
    """Stop every QEMU this runner started (Ctrl-C)."""
    STOPPING.set()
    with LIVE_LOCK:
        live = list(LIVE_QEMUS)
    for q in live:
        try:
            q.kill()
        except OSError:
            pass
