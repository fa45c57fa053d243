"""The launcher's command line, parsed once: the flags the bundle reads or takes (`Launch`), and
TensorBoard's own argv, built once from them (`Launch.argv`).

The bundle's own flags (`HELP`, which `--help` shows first) are taken off before TensorBoard
parses the rest.

A flag may be abbreviated as TensorBoard's argparse takes it (`--logdir_s` for --logdir_spec, `--po`
for --port: a prefix of one flag only); --logdir with --logdir_spec is refused, as upstream refuses
it (rather than dropping the spec without a word).

The bundle's defaults, where the command line says nothing: listen on 127.0.0.1 only, reload
every 2 s (upstream: 5 s), so that with mxboard's flush_secs=2 a point logged is served within
about 4 s, and serve one --logdir with the bundle's own loader (loader/), which upstream's
--load_fast=true (the Rust data server) and --load_fast=false (the Python loader) replace.
"""
import argparse
import dataclasses
import functools
import sys
from typing import Dict, List, Optional, Set, Tuple

from mxboard._format.sizes import parse_bytes
from mxboard.storage.remote.profiles import PROFILES, checked_logdir
from tensorboard_bundle import upstream
from tensorboard_bundle.access import allowed_names, allowed_origins, is_loopback

__all__ = ["HELP", "Launch", "parse"]

_STORE_SCHEMES = frozenset(scheme for profile in PROFILES for scheme in profile.schemes)

HELP = """mxboard's TensorBoard bundle: no TensorFlow needed, every dashboard served. It listens on
127.0.0.1 only (--bind_all or --host for more), asks for a token (the URL it prints carries it),
reloads every 2 s, and serves a logdir in an object store (s3://, gs://, az://) from a local
mirror, with flags of its own:
  --auth token|none       token (the default): a random token, or MXBOARD_TOKEN's, or
                          --token_file's; none: anyone who reaches the server reads (refused
                          with --bind_all or a --host other than this machine's loopback)
  --token_file PATH       the token, from a file of your own that no one else may read
  --allow_host NAME       a name the server answers to besides localhost, its loopback
                          addresses, this machine's names and --host (repeat, or NAME,NAME)
  --allow_origin ORIGIN   an origin whose pages may change state here besides the server's
                          own, as scheme://host[:port]: a proxy's, where the browser sends no
                          Sec-Fetch-Site (plain HTTP to a name other than localhost) and the
                          proxy rewrites the Host (repeat, or ORIGIN,ORIGIN)
  --certfile PATH         serve HTTPS with this certificate (PEM), and --keyfile PATH its key
  --sock PATH             listen on a Unix socket of mode 0600 instead of a port (for proxies)
  --load_fast mxboard     mxboard's own loader, in this process (the default with --logdir):
                          every point kept, every record's checksum checked; TensorBoard's
                          loaders: true (the Rust data server), false (the Python loader),
                          auto (the Rust one where it can start)
  --mirror_dir DIR        keep the mirror in DIR (empty, or a mirror of the same logdir, which
                          is then reused); by default a temporary directory, removed at exit
  --mirror_max_bytes N    the most the mirror may hold on disk (suffixes K, M, G, T); by default
                          80% of the space free where it lives, at start
  --mirror_interval SECS  seconds from one pass over the store to the next, at least (default 2)
  --mirror_max_record_bytes N
                          a record in an event file claiming more ends that file's copy at the
                          record before it, said once (default 1G: no file in a store can make
                          the data server allocate what it claims)

TensorBoard's own flags:"""
# The bundle's own flags, taken off before TensorBoard reads the rest.
_OWN = ("mirror_dir", "mirror_max_bytes", "mirror_interval", "mirror_max_record_bytes", "auth", "token_file",
        "allow_host", "allow_origin", "certfile", "keyfile", "sock")
# Flags the bundle reads, and leaves for TensorBoard.
_READ = ("logdir", "logdir_spec", "load_fast", "port", "host", "reload_interval", "grpc_data_provider")
# Flags that take no value.
_SWITCHES = ("bind_all",)


@dataclasses.dataclass
class Launch:
    # TensorBoard's arguments, less the bundle's own flags and --logdir, --logdir_spec.
    rest: List[str]
    logdir: Optional[str] = None
    logdir_spec: Optional[str] = None
    load_fast: Optional[str] = None
    # "mxboard": the bundle's own in-process loader (the default with --logdir; --load_fast=mxboard,
    # a value TensorBoard's parser does not know, is taken off its argv); None: TensorBoard's
    # load_fast decides.
    loader: Optional[str] = None
    port: Optional[str] = None
    host: Optional[str] = None
    reload_interval: Optional[str] = None
    bind_all: bool = False
    mirror_dir: Optional[str] = None
    mirror_max_bytes: Optional[int] = None
    mirror_interval: float = 2.0
    mirror_max_record_bytes: Optional[int] = None
    # None: no token asked (--auth none).
    auth: str = "token"
    token_file: Optional[str] = None
    allow_hosts: Tuple[str, ...] = ()
    allow_origins: Tuple[str, ...] = ()
    certfile: Optional[str] = None
    keyfile: Optional[str] = None
    sock: Optional[str] = None

    def spec_entries(self) -> Dict[str, Optional[str]]:
        """{path: name or None} of --logdir_spec, parsed as TensorBoard parses it."""
        from tensorboard.backend.event_processing.data_ingester import _parse_event_files_spec

        return _parse_event_files_spec(self.logdir_spec) if self.logdir_spec else {}

    def argv(self, program: str, logdir: Optional[str] = None, logdir_spec: Optional[str] = None) -> List[str]:
        """TensorBoard's argv: `program`, the rest, the logdir (or spec) to serve (default: as
        given), and the bundle's defaults where nothing was said."""
        logdir, logdir_spec = (logdir, logdir_spec) if logdir or logdir_spec else (self.logdir, self.logdir_spec)
        argv = [program] + self.rest
        argv += ["--logdir", logdir] if logdir else ["--logdir_spec", logdir_spec] if logdir_spec else []
        if not (self.bind_all or self.host or self.sock):
            argv += ["--host", "127.0.0.1"]
        if not self.reload_interval:
            argv += ["--reload_interval", "2"]
        return argv

    @property
    def listens_on(self) -> str:
        """The host the server binds ("" with --bind_all: every address)."""
        return "" if self.bind_all else self.host or "127.0.0.1"

    @property
    def on_network(self) -> bool:
        """Whether the server listens where other machines may reach it."""
        return not self.sock and (self.bind_all or not is_loopback(self.listens_on))


def parse(argv: List[str]) -> Launch:
    """One pass over `argv` (argv[0] the program): `--name value` and `--name=value` alike.
    A bad value of the bundle's own flags ends the launch with one line."""
    found, repeated, rest, switches = _scan(argv)
    if "logdir" in found and "logdir_spec" in found:
        # These are upstream's words.
        sys.exit("Error: May not specify both --logdir and --logdir_spec")
    try:
        launch = Launch(
            rest=rest, logdir=_logdir(found.get("logdir")), logdir_spec=found.get("logdir_spec"),
            load_fast=found.get("load_fast"), loader=_loader(found), port=found.get("port"), host=found.get("host"),
            reload_interval=found.get("reload_interval"), bind_all="bind_all" in switches,
            mirror_dir=found.get("mirror_dir"),
            mirror_max_bytes=_bytes(found, "mirror_max_bytes"),
            mirror_interval=_seconds(found.get("mirror_interval", "2")),
            mirror_max_record_bytes=_bytes(found, "mirror_max_record_bytes"),
            auth=found.get("auth", "token"), token_file=found.get("token_file"),
            allow_hosts=tuple(sorted(allowed_names(repeated["allow_host"]))),
            allow_origins=tuple(sorted(allowed_origins(repeated["allow_origin"]))), certfile=found.get("certfile"),
            keyfile=found.get("keyfile"), sock=found.get("sock"))
        _check_access(launch, found)
        # Refused as --logdir is; TensorBoard reads file:// itself.
        for path, group in launch.spec_entries().items():
            _logdir(path)
            if group and group.lower() in _STORE_SCHEMES and path.startswith("/") and not path.startswith("//"):
                # `s3:/bucket/x`: TensorBoard would read the group "s3" of the local directory /bucket/x
                _logdir("%s:%s" % (group, path))
    except ValueError as exc:
        sys.exit("Error: %s" % exc)
    return launch


def _scan(argv: List[str]) -> Tuple[Dict[str, str], Dict[str, List[str]], List[str], Set[str]]:
    """`argv`'s flags: (the last value of each flag the bundle reads, every value of the flags
    that may be repeated, what TensorBoard gets, the switches given)."""
    found: Dict[str, str] = {}
    repeated: Dict[str, List[str]] = {"allow_host": [], "allow_origin": []}
    rest: List[str] = []
    switches = set()
    i = 1
    while i < len(argv):
        arg = argv[i]
        name, has_value, value = arg[2:].partition("=") if arg.startswith("--") else ("", False, "")
        if name == "token":
            # Not taken for --token_file, its one match: a token's value there is in argv, which
            # `ps` shows to every user.
            sys.exit("Error: there is no --token: every user of this machine sees a command line (ps). Set "
                     "MXBOARD_TOKEN in the environment, or put the token in a file of mode 0600: --token_file PATH")
        name = _full_name(name)
        if name in _OWN + _READ:
            if not has_value and i + 1 < len(argv):
                value, i = argv[i + 1], i + 1
            # A flag without its value: TensorBoard says so.
            elif not has_value:
                rest.append(arg)
                i += 1
                continue
            found[name] = value
            repeated.get(name, []).append(value)
            if name in _READ and name not in ("logdir", "logdir_spec") and (name, value) != ("load_fast", "mxboard"):
                rest += ["--" + name, value]
        else:
            if name in _SWITCHES and (not has_value or value.lower() in ("true", "1")):
                switches.add(name)
            rest.append(arg)
        i += 1
    return found, repeated, rest, switches


def _loader(found: Dict[str, str]) -> Optional[str]:
    """The bundle's own loader, "mxboard", where --load_fast=mxboard asks for it, or where
    --load_fast is not given and --grpc_data_provider (a data server of the user's) is not; else
    None. It serves one logdir: a --logdir_spec that stays a spec (logdirs.py makes one tree of
    it where it can) is served by upstream's Python loader, as upstream serves it."""
    asked = found.get("load_fast")
    if asked == "mxboard" and "logdir_spec" in found:
        raise ValueError("--load_fast=mxboard serves one --logdir: leave out --logdir_spec, or use --load_fast=false")
    if asked is None and "grpc_data_provider" not in found:
        return "mxboard"
    return "mxboard" if asked == "mxboard" else None


def _check_access(launch: Launch, found: Dict[str, str]) -> None:
    """The access flags, together: each refusal is one line (ValueError) naming the flags."""
    if launch.auth not in ("token", "none"):
        raise ValueError("--auth %s: token (the default) or none" % launch.auth)
    if launch.auth == "none" and launch.token_file:
        raise ValueError("--auth none asks for no token: leave out --token_file, or --auth none")
    if launch.keyfile and not launch.certfile:
        raise ValueError("--keyfile needs --certfile, the certificate it is the key of")
    if launch.sock:
        others = [flag for flag in ("port", "host", "certfile") if flag in found] + (["bind_all"] if launch.bind_all
                                                                                     else [])
        if others:
            raise ValueError("--sock listens on a Unix socket instead of a port: leave out %s"
                             % ", ".join("--" + flag for flag in others))
    if launch.auth == "none" and launch.on_network:
        raise ValueError("--auth none with %s would let anyone who reaches this machine read every run: keep the "
                         "token (leave out --auth none), or listen on 127.0.0.1 only"
                         % ("--bind_all" if launch.bind_all else "--host " + (launch.host or "")))


def _logdir(logdir: Optional[str]) -> Optional[str]:
    """--logdir as mxboard's writer and reader take it (`~` expanded, which the shell leaves in
    `--logdir=~/x`; a `file://` URL as its path; a mistyped scheme refused in their words); a
    store whose client package is missing is left to logdirs.py, which says what reads it."""
    return None if logdir is None else checked_logdir(logdir, packages=False)


def _full_name(name: str) -> str:
    """`name` as TensorBoard's argparse reads it (allow_abbrev): a prefix of exactly one flag
    is that flag, if it is one the bundle reads or takes; any other name as given."""
    known = _OWN + _READ + _SWITCHES
    if not name or name in known:
        return name
    matches = [flag for flag in _every_flag() if flag.startswith(name)]
    return matches[0] if len(matches) == 1 and matches[0] in known else name


@functools.lru_cache(maxsize=None)
def _every_flag() -> Tuple[str, ...]:
    """The names of every flag TensorBoard's server takes (its core plugin defines them; no
    other plugin of the bundle defines one), and the bundle's own."""
    from tensorboard.plugins.core import core_plugin

    parser = argparse.ArgumentParser(add_help=False)
    core_plugin.CorePluginLoader().define_flags(parser)
    # argparse lists its options only in a private list: it has no public accessor of them.
    return tuple(option[2:] for action in upstream.parser_actions(parser) for option in action.option_strings
                 if option.startswith("--")) + _OWN


def _bytes(found: Dict[str, str], name: str) -> Optional[int]:
    return parse_bytes(found[name], "--" + name) if name in found else None


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1
    if not seconds > 0:
        raise ValueError("--mirror_interval %r: a number of seconds above 0" % text)
    return seconds
