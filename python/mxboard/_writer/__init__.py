"""The writer thread and the process around it.

writer_thread.py is the seam: the methods the caller's side uses. intake.py holds what waits for
the thread, in call order, within its bounds. event_files.py builds, encodes and writes each
batch to the event files, and encoding.py turns events into bytes. callsite.py shows a warning
at the user's line, from either thread. process.py tells the process's ends of each writer
thread: lifecycle.py keeps the registry of writer threads (a fork, the reaper), process_exit.py
closes them at exit, and signals.py flushes them at SIGTERM and SIGHUP, through c_calls.py
where Python refuses a call off the main thread."""
