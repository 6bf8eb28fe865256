"""The suite's machinery: the headless runner, the generated tables, the docs build.

It may import helpers; helpers never imports it.
"""
