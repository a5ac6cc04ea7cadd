module attributes {dist.placement = #dist.placement<gpu, [4]>} {
}
