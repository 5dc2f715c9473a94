"""One router description -> both the kernel's `ip`/sysctl commands and the lwt6 config file.

A router description is a list of statements in the lwt6 config syntax (iproute2 style, optional
leading `ip`). `render()` is the ONLY place that turns a description into something either side
consumes, so the two sides can never drift: the lwt6 file is the statements verbatim, and the
kernel commands are their mechanical translation (below).
"""
from dataclasses import dataclass, field


@dataclass
class KernelCmd:
    """One kernel-side action: `ip -n NS <argv>` (with optional stdin) or a sysctl write."""
    kind: str                 # "ip" | "sysctl"
    argv: list = field(default_factory=list)   # for "ip"
    stdin: str = None
    key: str = None           # for "sysctl"
    value: str = None
    undo: list = field(default_factory=list)   # KernelCmds that revert this one (sysctl: filled at apply time)
    text: str = ""            # the source statement, for error messages


def _opt(tokens, name):
    return tokens[tokens.index(name) + 1] if name in tokens else None


def render(statements):
    """Return (kernel_cmds, lwt6_config_text) for a list of statements.

    Translation rules (kernel side):
      link add N [address M] [mtu K]       -> ip link set dev N [address M] [mtu K] up   (the veth exists)
      addr add A dev D                      -> ip addr replace A dev D [nodad for IPv6]
      neigh add A lladdr M dev D            -> ip neigh replace A lladdr M dev D nud permanent
      [-6|-4] route add ...                 -> ip [-6|-4] route replace ...   (undo: route del PREFIX [table N])
      [-6|-4] route replace|change ...      -> same                           (undo: route del PREFIX [table N])
      [-6|-4] route del PREFIX [table N]    -> same                           (no undo)
      sr tunsrc set A                       -> same                           (undo: sr tunsrc set ::)
      sr hmac set K ALGO secret S           -> ip sr hmac set K ALGO, S on stdin (undo: empty secret = delete)
      ioam namespace add N ... / schema add S ... / namespace set ...  -> same (undo: del N / del S)
      sysctl K=V                            -> write /proc/sys/K in the namespace (undo: restore old value)
    """
    cmds = []
    for raw in statements:
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        t = text.split()
        if t[0] == "ip":
            t = t[1:]
        fam = None
        if t[0] in ("-6", "-4"):
            fam, t = t[0], t[1:]
        head = t[:2]
        if head == ["link", "add"]:
            argv = ["link", "set", "dev", t[2]]
            for k in ("address", "mtu"):
                if _opt(t, k):
                    argv += [k, _opt(t, k)]
            cmds.append(KernelCmd("ip", argv + ["up"], text=text))
        elif head == ["addr", "add"]:
            argv = ["addr", "replace"] + t[2:] + (["nodad"] if ":" in t[2] else [])
            cmds.append(KernelCmd("ip", argv, text=text))
        elif head == ["neigh", "add"]:
            cmds.append(KernelCmd("ip", ["neigh", "replace"] + t[2:] + ["nud", "permanent"], text=text))
        elif head in (["route", "add"], ["route", "replace"], ["route", "change"]):
            f = [fam] if fam else []
            # `table N` stays where it is (before or after the encap, as iproute2 accepts); the undo names it
            table = ["table", _opt(t, "table")] if _opt(t, "table") and "encap" not in t[:t.index("table")] else []
            verb = "change" if t[1] == "change" else "replace"
            prefix = t[3] if t[2] in ("unicast", "blackhole", "unreachable", "prohibit") else t[2]
            cmds.append(KernelCmd("ip", f + ["route", verb] + t[2:], text=text,
                                  undo=[KernelCmd("ip", f + ["route", "del", prefix] + table)]))
        elif head == ["route", "del"]:
            f = [fam] if fam else []
            cmds.append(KernelCmd("ip", f + t, text=text))
        elif t[:3] == ["sr", "tunsrc", "set"]:
            cmds.append(KernelCmd("ip", t, text=text, undo=[KernelCmd("ip", ["sr", "tunsrc", "set", "::"])]))
        elif t[:3] == ["sr", "hmac", "set"]:
            keyid, algo = t[3], t[4]
            secret = _opt(t, "secret") or ""
            cmds.append(KernelCmd("ip", ["sr", "hmac", "set", keyid, algo], stdin=secret + "\n", text=text,
                                  undo=[KernelCmd("ip", ["sr", "hmac", "set", keyid, algo], stdin="\n")]))
        elif t[:3] == ["ioam", "namespace", "add"]:
            cmds.append(KernelCmd("ip", t, text=text, undo=[KernelCmd("ip", ["ioam", "namespace", "del", t[3]])]))
        elif t[:3] == ["ioam", "schema", "add"]:
            cmds.append(KernelCmd("ip", t, text=text, undo=[KernelCmd("ip", ["ioam", "schema", "del", t[3]])]))
        elif t[:3] == ["ioam", "namespace", "set"]:
            cmds.append(KernelCmd("ip", t, text=text))
        elif t[0] == "sysctl":
            kv = " ".join(t[1:]).replace(" ", "")
            key, value = kv.split("=", 1)
            cmds.append(KernelCmd("sysctl", key=key, value=value, text=text))
        else:
            raise ValueError(f"render(): unsupported statement {text!r}")
    lwt6_text = "".join(s.strip() + "\n" for s in statements if s.strip())
    return cmds, lwt6_text


class KernelRouter:
    """Applies rendered statements to a kernel router namespace and can undo them."""

    def __init__(self, topo, short):
        self.topo, self.short = topo, short
        self.ns = topo.name(short)
        self._undo = []

    def _exec(self, c):
        from ktnet import sysctl_get, sysctl_set, run, NetnsError
        if c.kind == "sysctl":
            old = sysctl_get(self.ns, c.key)
            sysctl_set(self.ns, c.key, c.value)
            return [KernelCmd("sysctl", key=c.key, value=old)]
        r = run(["ip", "-n", self.ns] + c.argv, stdin=c.stdin, check=False)
        if r.returncode != 0:
            raise NetnsError(f"kernel rejected `{c.text or ' '.join(c.argv)}` "
                             f"(ip {' '.join(c.argv)}): {r.stderr.strip()}")
        return c.undo

    def apply(self, statements, permanent=False):
        """Apply statements; unless permanent, remember how to revert them (see undo())."""
        cmds, _ = render(statements)
        for c in cmds:
            u = self._exec(c)
            if not permanent:
                self._undo.append(u)

    def undo(self):
        """Revert everything applied since the last undo(), newest first (errors ignored)."""
        from ktnet import run, sysctl_set
        while self._undo:
            for c in reversed(self._undo.pop()):
                try:
                    if c.kind == "sysctl":
                        sysctl_set(self.ns, c.key, c.value)
                    else:
                        run(["ip", "-n", self.ns] + c.argv, stdin=c.stdin, check=False)
                except Exception:
                    pass
