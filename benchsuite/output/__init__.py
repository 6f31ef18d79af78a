"""Output: rich tables, the JSON report files, the HTML page and its plots."""
