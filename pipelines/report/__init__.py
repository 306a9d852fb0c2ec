"""The HTML report people open: one self-contained file per day and per ISO week, under the warehouse folder.

writer.py reads the serving copy and writes the file; queries.py holds the SQL over the marts; html.py the page;
charts.py the SVG charts (matplotlib, imported only when a report is written); cli.py `kubeledger report`.
"""
