"""Dataset builders: SNOMED CT benchmark datasets and EHR co-occurrence candidates."""
