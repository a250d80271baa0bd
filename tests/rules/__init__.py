"""Tests of the replay engine (rules/): one test per procedure section, raising and clean."""
