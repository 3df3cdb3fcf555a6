"""The peer harness: the libraries redmem is measured against, each in a virtual environment of its own.

A ``*_bridge`` module makes the venv (``popoto_bridge.library_venv``) and starts its ``*_runner`` script
there (``popoto_bridge.RunnerProcess``); the runner answers JSON lines (``runner_protocol``, standard
library only). popoto 1.10.1, elfmem 0.20.0 and redisvl 0.28 on Redis Stack 7.4: benchmarks/README.md.
"""
