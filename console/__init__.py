"""The surveillance console (``pitwatch serve``) and the daily report (``pitwatch report``)."""
