"""The JSON Schemas of a case (case.schema.json) and of the JSON report (report.schema.json)."""
