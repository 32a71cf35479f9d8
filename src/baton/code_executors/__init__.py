"""Code executors, where the reference's code imports them from (`...code_executors`)."""

from baton.code_executors.built_in_code_executor import BuiltInCodeExecutor

__all__ = ["BuiltInCodeExecutor"]
