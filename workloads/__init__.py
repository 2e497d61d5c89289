"""pimcloud.workloads"""
