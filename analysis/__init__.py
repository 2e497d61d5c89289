"""pimcloud.analysis"""
