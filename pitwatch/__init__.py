"""pitwatch: replays every round of a casino's table games against the written dealing procedure.

One import package; its subpackages are the layers, each importing only the
ones below it (``tests/test_layers.py`` checks it; docs/layout.md draws it):

====================  ===========================  ==============================================
layer                 package (folder)             what it is
====================  ===========================  ==============================================
cli                   ``pitwatch.cli`` (cli/)      the ``pitwatch`` command
console               ``pitwatch.console``         the web console (``pitwatch serve``), the report
batch, live, queries  ``pitwatch.pipelines``       the nightly batch (Beam)
                      ``pitwatch.live``            ``pitwatch watch``, the live service
                      ``pitwatch.queries``         the analysts' SQL over the lake
                      ``pitwatch.simulator``       a simulated floor and its ground truth
lake                  ``pitwatch.lake`` (lake/)    the Delta tables, runs chain, verify, vacuum
inputs                ``pitwatch.inputs``          input files read once, devices registry
engine                ``pitwatch.engine``          the driver that replays a table's events
                      ``pitwatch.rules``           every rule of the four procedures
                      ``pitwatch.seeds``           reference data (CSV)
contract              ``pitwatch.schemas``         the event contract: decode, Arrow schemas
base                  ``pitwatch.config``,         the operator's settings file, the severities,
                      ``pitwatch.wording``         the operator's small files' reader, counted nouns
====================  ===========================  ==============================================
"""

__version__ = "0.1.0"
