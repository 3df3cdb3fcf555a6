"""Lua scripts of redmem, one ``.lua`` file per script, each opening with its KEYS/ARGV contract."""
