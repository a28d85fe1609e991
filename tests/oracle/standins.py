"""Run code of an unpacked HoloDeck wheel in a child process with nothing else of HoloDeck's
installed: :data:`STANDINS` makes ``holodeck`` importable from the folder in ``argv[1]`` and
answers every other missing module with a stand-in whose attributes are mocks, so a module is
read for what it does with the config, not for the SDKs it imports. Tests append their own code
(the 0.6.40 loader in ``test_config_oracle``, 0.7.1's ``Agent`` and ``build_options`` in
``test_allowlist``) and run the result with ``python -c``.
"""

from __future__ import annotations

STANDINS = r"""
import importlib.abc, importlib.machinery, importlib.util, json, os, sys, types
from unittest import mock



class _Standin(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return mock.MagicMock(name=name)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        top = name.split(".")[0]
        if top == "holodeck" or importlib.machinery.PathFinder.find_spec(top) is not None:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=True)

    def create_module(self, spec):
        module = _Standin(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


sys.path.insert(0, sys.argv[1])
sys.meta_path.append(_Finder())
"""
