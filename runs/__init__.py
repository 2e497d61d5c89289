"""pimcloud.runs"""
