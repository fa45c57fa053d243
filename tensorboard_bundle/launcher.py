"""`python -m tensorboard_bundle` (and `tensorboard`, which hands over to it: handover.py):
upstream TensorBoard with the bundle's fixes. Binds 127.0.0.1 unless --host or --bind_all says
otherwise, answers only whoever holds its token (access.py; where it listens: serving.py),
reloads every 2 s; needs no TensorFlow and no network; prints one line with the URL (its token
in it), the data loader in use and the logdir. The data loader is the bundle's own (loader/)
unless --load_fast names one of upstream's. A logdir in an object store is served from a local
mirror (logdirs.py). The command line is parsed once (arguments.py). A
Ctrl-C, while TensorBoard starts or serves, ends it with one line that says what was kept, and
status 130. Its end is bounded: EXIT_SECS after TensorBoard stopped, every thread's stack is
written and the process ends with status 1."""
import faulthandler
import importlib
import logging
import os
import signal
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Sequence, Tuple

if TYPE_CHECKING:
    from tensorboard_bundle.arguments import Launch

__all__ = ["main", "plugins"]

# How long the process may take to end once TensorBoard stopped (a signal, a Ctrl-C, an error):
# its threads' joins and exit hooks (a mirror's removal, TensorBoard's info file) run within it.
EXIT_SECS = 30


# tensorboard ships no types: its modules and classes are Any here
def patched(name: str) -> Any:
    """The module `name` of the upstream files patched at build time (tools/pip_package/vendor.py)."""
    try:
        return importlib.import_module("tensorboard_bundle._patched." + name)
    except ModuleNotFoundError as e:
        if e.name != "tensorboard_bundle._patched." + name:
            raise
        from tensorboard_bundle import _patched

        sys.exit("tensorboard_bundle: %s holds no patched TensorBoard files: this is a source checkout or "
                 "an editable install, which the build does not vendor into. Install the package "
                 "(pip install .) to run the server." % os.path.dirname(_patched.__file__))


def plugins() -> List[Any]:
    """TensorBoard's plugins (patched default.py: a broken third-party one is skipped), with the
    projector replaced by its patched copy (its files read as package data), the scalars and
    Time Series plugins by ours (their tags made from each run's kept part under the bundle's
    loader: kept_tags.py), and the core plugin by ours (its assets gzipped without compressing
    them again: assets.py; with its debug information, as upstream's default.py loads it)."""
    from tensorboard.plugins.core import core_plugin
    from tensorboard.plugins.metrics import metrics_plugin as upstream_metrics
    from tensorboard.plugins.projector import projector_plugin as upstream_projector
    from tensorboard.plugins.scalar import scalars_plugin as upstream_scalars

    from tensorboard_bundle import assets, kept_tags

    ours = {upstream_projector.ProjectorPlugin: patched("projector_plugin").ProjectorPlugin,
            upstream_scalars.ScalarsPlugin: kept_tags.ScalarsPlugin,
            upstream_metrics.MetricsPlugin: kept_tags.MetricsPlugin}
    return [assets.CorePluginLoader(include_debug_info=True) if isinstance(p, core_plugin.CorePluginLoader)
            else ours.get(p, p) for p in patched("default").get_plugins()]


def _use_patched_s3() -> None:
    """TensorBoard's S3 filesystem, patched (a bucket's root as a logdir), where gfile looks it up."""
    from tensorboard.compat.tensorflow_stub.io import gfile as upstream

    from mxboard.storage.remote.profiles import S3

    gfile = patched("gfile")
    # Without boto3 upstream registers none either.
    if gfile.S3_ENABLED:
        upstream.register_filesystem(S3.schemes[0], gfile.S3FileSystem())


def _tensorboard(program: ModuleType, launch: "Launch") -> Any:
    """TensorBoard with the bundle's own loader (loader/) where the launch asks for it (the
    default for a local --logdir or a store's mirror); otherwise upstream's, where the fast one
    answers no other user (data_server.py) and is watched (watchdog.py): if its process dies, the
    Python loader serves from then on. A server on a Unix socket writes no info file (it has no
    port, which the file must name, and no notebook could show it)."""
    from mxboard._format.names import is_url
    from mxboard.storage.remote.profiles import profile_of

    # A module known at run time.
    class TensorBoard(program.TensorBoard):  # type: ignore[misc,name-defined]
        def _register_info(self, server: Any) -> None:
            if not launch.sock:
                super()._register_info(server)

        # The fast loader's data server, private to this process (data_server.py).
        def _start_subprocess_data_ingester(self) -> Any:
            from tensorboard_bundle import data_server

            return data_server.start_ingester(self)

        def _make_data_provider(self) -> Tuple[Any, Any]:
            if launch.loader == "mxboard" and self.flags.logdir and not is_url(self.flags.logdir):
                # The bundle's own loader, in this process: no data server.
                from tensorboard_bundle import loader

                self.data_loader = "mxboard (in-process)"
                return loader.start(self.flags.logdir, self.flags.reload_interval,
                                    self.flags.purge_orphaned_data), None
            if launch.loader == "mxboard" and launch.load_fast == "mxboard":
                sys.exit("Error: --load_fast=mxboard reads a local --logdir, or a store's mirror: install %s, or "
                         "use --load_fast=true" % profile_of(self.flags.logdir).install)
            provider, multiplexer = super()._make_data_provider()
            if not getattr(self, "data_loader", "").startswith("fast"):
                return provider, multiplexer
            from tensorboard.backend.event_processing import data_ingester

            from tensorboard_bundle.watchdog import Watched

            def python_loader() -> Any:
                # As patches/0001: every file of a run polled.
                if self.flags.reload_multifile is None:
                    self.flags.reload_multifile = True
                ingester = data_ingester.LocalDataIngester(self.flags)
                ingester.start()
                self._fallback_ingester = ingester
                return ingester.data_provider

            return Watched(provider, python_loader), multiplexer

    return TensorBoard


def _use_patched_record_reader() -> None:
    """The Python loader's record reader, patched (it never reads more than a file holds), where
    the loader looks it up (tf.pywrap_tensorflow, TensorFlow's stub)."""
    from tensorboard.compat.tensorflow_stub import pywrap_tensorflow

    from tensorboard_bundle import upstream

    upstream.replace(pywrap_tensorflow, "PyRecordReader_New", patched("pywrap_tensorflow").PyRecordReader_New)


def _use_patched_respond() -> None:
    """TensorBoard's JSON answers dumped without walking every value first where they need no
    cleansing (patches/0009), where the plugins look Respond up (http_util's module)."""
    from tensorboard.backend import http_util

    from tensorboard_bundle import upstream

    upstream.replace(http_util, "Respond", patched("http_util").Respond)


def _say_if_missing(logdir: Optional[str]) -> None:
    """A local --logdir that does not exist is said at once: a typo, or a run that has not
    started yet (otherwise the page only says "No dashboards are active"). It is mxboard's one
    check of a logdir (`~` expanded, as arguments.py expanded it), where a reader's error is
    the server's note: TensorBoard serves the runs once they appear."""
    from mxboard.storage.remote.profiles import checked_logdir

    if not logdir:
        return
    try:
        checked_logdir(logdir, packages=False, must_exist=True)
    except ValueError:
        sys.stderr.write("note: --logdir %s does not exist (yet): its runs are shown once they appear there\n"
                         % logdir)


def _access(launch: "Launch") -> Tuple[Optional[str], Any, Any]:
    """The token (None with --auth none), the TLS context (or None) and the bound Unix socket (or
    None) the flags ask for, each said in a line where it leaves a door open; a bad flag, file or
    path ends the launch with one line."""
    import atexit

    from tensorboard_bundle import access, serving

    try:
        token = None if launch.auth == "none" else access.read_token(launch.token_file, dict(os.environ))
        tls = serving.tls_context(launch.certfile, launch.keyfile) if launch.certfile else None
        sock = serving.bind_unix(launch.sock) if launch.sock else None
    except ValueError as exc:
        sys.exit("Error: %s" % exc)
    if sock is not None:
        atexit.register(serving.remove_socket, sock.getsockname(), os.stat(sock.getsockname()).st_ino)
    if token is None:
        who = ("only you (and root) can connect to %s (mode 0600)" % launch.sock if launch.sock else
               "every user of this machine, and any web page through a name of this machine, can read these runs")
        sys.stderr.write("note: --auth none: no token is asked: %s\n" % who)
    elif launch.on_network and tls is None:
        sys.stderr.write("note: no --certfile/--keyfile: the token and the runs cross the network in clear (http); "
                         "anyone on the way can read them\n")
    return token, tls, sock


def _raise_open_file_limit() -> None:
    """The data server keeps every event file open: let it open as many as the hard limit allows
    (the soft one is often 1024, which a logdir of 1,500 runs passes)."""
    try:
        import resource
    # The resource module is not on this platform.
    except ImportError:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(1 << 20, hard if hard != resource.RLIM_INFINITY else 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        # A platform's own bound (macOS): keep the soft limit.
        except (ValueError, OSError):
            pass


def _configure_as_asked(tensorboard: Any, arguments: List[str]) -> Callable[[List[str]], Any]:
    """TensorBoard's flags parser, with the cache key of the arguments the user gave (not of the
    bundle's defaults and mirrors): `tensorboard.notebook` (%tensorboard, VS Code, Colab) finds
    the server it started by that key in the info file, and waited 60 s in vain."""
    from tensorboard import manager

    def configure(argv: List[str]) -> Any:
        result = tensorboard.configure(argv)
        tensorboard.cache_key = manager.cache_key(working_directory=os.getcwd(), arguments=arguments,
                                                  configure_kwargs={})
        return result

    return configure


class _Phase:
    """How far the launch got, for the line that a Ctrl-C prints."""

    serving = False


def _say_stopped() -> None:
    """A Ctrl-C's one line, in place of a traceback: what stopped, and what was kept. A run
    that the process before this one saved (the demo's, SAVED) is named, with a command that
    serves it again."""
    from tensorboard_bundle.serving import SAVED

    what = "TensorBoard stopped" if _Phase.serving else "stopped while TensorBoard started"
    saved = os.environ.get(SAVED)
    if saved:
        from mxboard._format.commands import serve_command

        line = "%s (Ctrl-C): the run is saved in %s (serve it: %s)" % (
            what, saved, serve_command(os.path.dirname(saved) or "."))
    else:
        line = "%s (Ctrl-C)" % what
    sys.stderr.write("\n%s\n" % line)
    sys.stderr.flush()


def _parsed(argv: List[str]) -> Tuple["Launch", bool]:
    """The command line parsed, and whether it asks for help. Where the bundle's loader will read
    a local --logdir, a big first pass's scanning process is started now, before TensorBoard's
    imports, which it overlaps (loader/ahead.py)."""
    from mxboard._format.names import is_url
    from tensorboard_bundle import arguments

    launch = arguments.parse(argv)
    helping = any(arg in ("-h", "--help", "--helpfull") for arg in argv[1:])
    if not helping and launch.loader == "mxboard" and launch.logdir and not is_url(launch.logdir):
        from tensorboard_bundle.loader import ahead

        ahead.start(launch.logdir)
    return launch, helping


def main(argv: Optional[Sequence[str]] = None) -> None:
    """The bundle's TensorBoard. A Ctrl-C while it starts or serves ends it with one line and
    exit status 130, never a traceback. A second Ctrl-C while it ends changes nothing: the exit's
    hooks (TensorBoard's info file, a mirror's directory) run to their end."""
    try:
        _launch(argv)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _say_stopped()
        sys.exit(130)
    finally:
        _bound_the_end()


def _bound_the_end() -> None:
    """A thread or a hook that never returns would hold a closed terminal's server, or a
    service's stop, for ever: after EXIT_SECS the stacks say where, and the process ends. Where
    stderr cannot be written (None, closed, no descriptor), the end is bounded all the same."""
    try:
        faulthandler.dump_traceback_later(EXIT_SECS, exit=True)
    except (RuntimeError, ValueError, OSError):
        faulthandler.dump_traceback_later(EXIT_SECS, exit=True, file=open(os.devnull, "w"))


def _launch(argv: Optional[Sequence[str]]) -> None:
    argv = list(sys.argv if argv is None else argv)
    asked = argv[1:]
    # This tells handover.py that this process is the bundle.
    os.environ["MXBOARD_TENSORBOARD_BUNDLE"] = "1"
    launch, helping = _parsed(argv)
    import absl.logging
    from absl import app
    from tensorboard.plugins import base_plugin

    from tensorboard_bundle import access, arguments, info_files, locate, logdirs, serving

    # What tensorboard.main_lib.global_init does, less its TensorFlow notice: this bundle
    # needs no TensorFlow, and says which data loader it uses instead.
    os.environ["GCS_READ_CACHE_DISABLED"] = "1"
    absl.logging.set_verbosity(absl.logging.WARNING)
    logging.getLogger("tensorboard_bundle").setLevel(logging.WARNING)

    if "TENSORBOARD_DATA_SERVER_BINARY" not in os.environ:
        binary, why_not = locate.data_server_binary()
        if binary:
            os.environ["TENSORBOARD_DATA_SERVER_BINARY"] = binary
        # Where upstream's loaders serve, the banner then names the Python one; this says why.
        elif launch.loader != "mxboard":
            sys.stderr.write("note: no fast data loader: %s\n" % why_not)
    _use_patched_s3()
    _use_patched_record_reader()
    _use_patched_respond()
    _raise_open_file_limit()
    if helping:
        # Then TensorBoard's usage follows.
        print(arguments.HELP, flush=True)
    token, tls, sock = (None, None, None) if helping else _access(launch)
    info_files.forget_dead_servers()
    info_files.record_writer(token)
    if not launch.sock:
        serving.check_port(launch.port, launch.listens_on)
    logdir, spec = logdirs.serve_remote(launch)
    _say_if_missing(logdir or launch.logdir)
    program = patched("program")
    hosts = None if launch.sock else access.Hosts(launch.host, launch.allow_hosts)

    def guard(wsgi_app: Any, cookie: str) -> Any:
        return access.Guard(wsgi_app, token, hosts, cookie, secure=tls is not None, origins=launch.allow_origins)

    def bound() -> None:
        # Bound and listening, its URL said next: a Ctrl-C from now on stops a serving TensorBoard.
        _Phase.serving = True

    server_class = serving.factory(program, guard, token, tls, sock, bound)
    tensorboard = _tensorboard(program, launch)(plugins=plugins(), assets_zip_provider=locate.assets_zip_provider(),
                                                server_class=server_class)
    try:
        app.run(tensorboard.main, argv=launch.argv(argv[0], logdir, spec),
                flags_parser=_configure_as_asked(tensorboard, asked))
    except base_plugin.FlagsError as e:
        print("Error: %s" % e, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
