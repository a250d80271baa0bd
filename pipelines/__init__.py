"""The nightly batch: Apache Beam pipelines that read a day's inputs, replay every table and commit to the lake."""
